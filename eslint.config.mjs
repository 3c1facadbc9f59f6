import { readdirSync } from 'node:fs';
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

/** The packages: lambdas/<name>/src and lambdas/adapters/<name>/src, each imported as @pipeline/<name>. */
const ADAPTERS = readdirSync(new URL('./lambdas/adapters', import.meta.url));
const PACKAGES = [
  'core',
  'config',
  'der',
  'xml',
  'dss',
  'ca',
  'audit',
  'api',
  'doors',
  'csc',
  'dssext',
  'resources',
  ...ADAPTERS,
].join('|');

/**
 * Another package is imported by its alias, which names its index (lambdas/<name>/src/index.ts): never by a
 * relative path into its src, and never past its index (`@pipeline/adapters/dynamodb/audit-repository`).
 * The other entry points are the core's concerns (CORE_ENTRY_POINTS) and the HSM adapter's provisioning
 * (tools only, kept out of the Lambda bundles). The functions are hosted outside Lambda (the local runner)
 * through lambdas/handlers/index.ts, their factories, whose modules wire nothing at import.
 */
const PACKAGE_ENTRY_POINTS = [
  {
    regex: `^(\\.\\./)+(lambdas/)?(adapters/)?(${PACKAGES})/src(/|$)`,
    message: 'import another package by its alias (@pipeline/<name>, its index), not by a path into its src',
  },
  {
    regex: '^@pipeline/(?!adapters/hsm/provisioning$|core/)((?!adapters/)[^/]+|adapters/[^/]+)/.',
    message: 'import a package through its index (@pipeline/<name>), never past it into its files',
  },
  {
    regex: '^(\\.\\./)+(lambdas/)?handlers/.',
    message:
      'host a function through lambdas/handlers, its index of handler factories: not its entry point or files',
  },
];

/** The SDK belongs to the adapters (lambdas/adapters/*): everything else goes through them. */
const AWS_SDK_IN_ADAPTERS_ONLY = {
  regex: '^@aws-sdk/',
  message: 'only adapters (lambdas/adapters/*) use the AWS SDK; use or add an adapter',
};

/** The domain core imports nothing above it or beside it, and no AWS or HSM library. */
const CORE_PATTERNS = [
  {
    regex:
      '^((\\.\\./)+(adapters|handlers|test-support|resources|ca/src|audit/src|api/src|doors/src|csc/src|dssext/src|der/src|xml/src|dss/src|config/src)(/|$)|@pipeline/)',
    message: 'the domain core imports no adapter, service, handler, configuration or test support',
  },
  {
    regex: '^(@aws-sdk|@aws-lambda-powertools|pkcs11js)',
    message: 'the domain core uses no AWS or HSM library',
  },
];

/**
 * The floors of the core's concerns (lambdas/core/src/<concern>), lowest first: a concern imports only
 * concerns on a lower floor, never one beside it or above it, nor `..` (the core has no index). shared
 * holds the words every concern uses (algorithms, formats, errors, the HSM port); identity is who signs and
 * how the certificate names them; pki the certificates, their issuance and revocation; audit the log; pool
 * the key pool; signing one sign request, which uses all of them.
 */
const CORE_FLOORS = {
  shared: 0,
  identity: 1,
  forecast: 1,
  pki: 2,
  planning: 2,
  audit: 3,
  pool: 4,
  signing: 5,
  csc: 6,
};

/**
 * The core has no index of its own: it is imported by the entry points of its concerns,
 * `@pipeline/core/<concern>` (lambdas/core/src/<concern>/index.ts, the concerns of CORE_FLOORS), everywhere
 * outside lambdas/core, tests included: not `@pipeline/core`, not past an entry point into a concern's files
 * (`@pipeline/core/signing/signing`), not by a relative path into lambdas/core/src.
 */
const CORE_ENTRY_POINTS = [
  {
    regex: '^@pipeline/core$',
    message: "the core has no index: import the entry point of the name's concern (@pipeline/core/<concern>)",
  },
  {
    regex: `^@pipeline/core/(?!(${Object.keys(CORE_FLOORS).join('|')})$)`,
    message:
      "import the core through the entry point of the name's concern (@pipeline/core/<concern>), never past it into its files",
  },
  {
    regex: '^(\\.\\./)+(lambdas/)?core/src(/|$)',
    message:
      "import the core by the entry point of the name's concern (@pipeline/core/<concern>), not by a path into lambdas/core/src",
  },
];

function coreFloorPattern(concern) {
  const floor = CORE_FLOORS[concern];
  const notBelow = Object.keys(CORE_FLOORS).filter((c) => c !== concern && CORE_FLOORS[c] >= floor);
  return {
    regex: `^\\.\\.(/index)?$|^\\.\\./(${notBelow.join('|')})(/|$)`,
    message: `the core's ${concern} imports only the concerns below it (${
      Object.keys(CORE_FLOORS)
        .filter((c) => CORE_FLOORS[c] < floor)
        .join(', ') || 'none'
    }): move a word both need down to the lower concern`,
  };
}

/**
 * `no-restricted-imports` sees `import` declarations and `export ... from`, not `import()`: this rule
 * applies the same patterns to dynamic imports whose specifier is a string.
 */
const LAYERING = {
  rules: {
    'dynamic-imports': {
      meta: { type: 'problem', schema: false },
      create(context) {
        const patterns = (context.options[0]?.patterns ?? []).map((p) => ({
          regex: new RegExp(p.regex),
          message: p.message,
        }));
        const check = (node, specifier) => {
          const hit = patterns.find((p) => p.regex.test(specifier));
          if (hit) context.report({ node, message: `'${specifier}' import is restricted: ${hit.message}` });
        };
        return {
          ImportExpression(node) {
            const source = node.source;
            if (source.type === 'Literal' && typeof source.value === 'string') check(node, source.value);
            if (source.type === 'TemplateLiteral' && source.expressions.length === 0) {
              check(node, source.quasis[0].value.cooked);
            }
          },
        };
      },
    },
  },
};

export default tseslint.config(
  { ignores: ['node_modules/', '.local/', 'cdk.out/', 'bench/results/', 'coverage/', '**/*.js', '**/*.mjs'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  // Outside the core, tests included, the core only by the entry points of its concerns (the layers below
  // add their own rules to these for their files, tests excepted).
  {
    files: ['**/*.ts'],
    ignores: ['lambdas/core/**'],
    plugins: { layering: LAYERING },
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: CORE_ENTRY_POINTS }],
      'layering/dynamic-imports': ['error', { patterns: CORE_ENTRY_POINTS }],
    },
  },
  // The layers (docs/architecture.md): the domain core imports nothing above it or beside it; adapters
  // implement the core's ports and import no service or handler above them; only adapters call AWS (the
  // SDK); no production code imports test support or the local tooling. Static and dynamic imports alike.
  ...layer(['lambdas/core/src/**/*.ts'], CORE_PATTERNS),
  // Inside the core, each concern imports only the concerns on the floors below it.
  ...Object.keys(CORE_FLOORS).flatMap((concern) =>
    layer([`lambdas/core/src/${concern}/**/*.ts`], [...CORE_PATTERNS, coreFloorPattern(concern)]),
  ),
  ...layer(
    ['lambdas/adapters/*/src/**/*.ts'],
    [
      {
        regex:
          '^((\\.\\./)+(handlers|test-support|ca/src|audit/src|api/src|doors/src|csc/src|dssext/src)(/|$)|@pipeline/(ca|audit|api|doors|csc|dssext)$)',
        message: 'an adapter implements a port of the core and imports no service or handler above it',
      },
    ],
  ),
  ...layer(
    [
      'lambdas/ca/src/**/*.ts',
      'lambdas/audit/src/**/*.ts',
      'lambdas/api/src/**/*.ts',
      'lambdas/doors/src/**/*.ts',
      'lambdas/csc/src/**/*.ts',
      'lambdas/dssext/src/**/*.ts',
      'lambdas/der/src/**/*.ts',
      'lambdas/xml/src/**/*.ts',
      'lambdas/dss/src/**/*.ts',
    ],
    [
      {
        regex: '^((\\.\\./)+(handlers|test-support|adapters)(/|$)|@pipeline/adapters(/|$))',
        message:
          'a service imports no handler, no test support and no adapter: it uses the ports of the core, and the handlers wire the adapters to them',
      },
      AWS_SDK_IN_ADAPTERS_ONLY,
    ],
  ),
  ...layer(
    ['lambdas/handlers/**/*.ts'],
    [
      {
        regex: '(^|/)(test-support|scripts)(/|$)',
        message: 'production code imports no test support or tooling',
      },
      AWS_SDK_IN_ADAPTERS_ONLY,
    ],
  ),
  ...layer(
    ['lambdas/config/src/**/*.ts', 'lambdas/resources/src/**/*.ts', 'cdk/**/*.ts'],
    [
      {
        regex: '(^|/)(test-support|scripts|handlers)(/|$)',
        message: 'the CDK app and the configuration import no handler, test support or tooling',
      },
      AWS_SDK_IN_ADAPTERS_ONLY,
    ],
  ),
  // Test support (helpers for tests) and the local environment (runner, stand-ins, verifiers, fault
  // injection) are independent: neither builds on the other.
  ...layer(
    ['lambdas/test-support/**/*.ts'],
    [{ regex: '(^|/)scripts(/|$)', message: 'test support imports nothing from the local tooling' }],
  ),
  ...layer(
    ['scripts/local/**/*.ts'],
    [{ regex: '(^|/)test-support(/|$)', message: 'the local environment imports no test support' }],
  ),
  // The rest (the services, the other tools): only the packages' entry points.
  ...layer(
    ['lambdas/**/*.ts', 'scripts/**/*.ts'],
    [],
    [
      'lambdas/core/src/**',
      'lambdas/adapters/*/src/**',
      'lambdas/ca/src/**',
      'lambdas/audit/src/**',
      'lambdas/api/src/**',
      'lambdas/doors/src/**',
      'lambdas/csc/src/**',
      'lambdas/dssext/src/**',
      'lambdas/der/src/**',
      'lambdas/xml/src/**',
      'lambdas/dss/src/**',
      'lambdas/handlers/**',
      'lambdas/config/src/**',
      'lambdas/resources/src/**',
      'lambdas/test-support/**',
      'scripts/local/**',
    ],
  ),
);

/**
 * The layer rules for the files of one layer, tests excepted (they may reach across layers), with the
 * packages' entry points (every layer's production code imports another package by its index only).
 */
function layer(files, layerPatterns, ignores = []) {
  const patterns = [...layerPatterns, ...CORE_ENTRY_POINTS, ...PACKAGE_ENTRY_POINTS];
  return [
    {
      files,
      ignores: ['**/tests/**', '**/*.test.ts', ...ignores],
      plugins: { layering: LAYERING },
      rules: {
        '@typescript-eslint/no-restricted-imports': ['error', { patterns }],
        'layering/dynamic-imports': ['error', { patterns }],
      },
    },
  ];
}
