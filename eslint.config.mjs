import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

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
  // The layers (docs/architecture.md): the domain core imports nothing above it or beside it; adapters
  // implement the core's ports and import no service or handler above them; no production code imports
  // test support or the local tooling.
  ...layer(
    ['lambdas/core/src/**/*.ts'],
    [
      {
        regex:
          '^(\\.\\./)+(adapters|handlers|test-support|resources|ca/src|audit/src|api/src|pki/src|config/src)(/|$)',
        message: 'the domain core imports no adapter, service, handler, configuration or test support',
      },
      {
        regex: '^(@aws-sdk|@aws-lambda-powertools|pkcs11js)',
        message: 'the domain core uses no AWS or HSM library',
      },
    ],
  ),
  ...layer(
    ['lambdas/adapters/*/src/**/*.ts'],
    [
      {
        regex: '^(\\.\\./)+(handlers|test-support|ca/src|audit/src|api/src)(/|$)',
        message: 'an adapter implements a port of the core and imports no service or handler above it',
      },
    ],
  ),
  ...layer(
    [
      'lambdas/ca/src/**/*.ts',
      'lambdas/audit/src/**/*.ts',
      'lambdas/api/src/**/*.ts',
      'lambdas/pki/src/**/*.ts',
    ],
    [
      {
        regex: '^(\\.\\./)+(handlers|test-support|adapters/hsm)(/|$)',
        message:
          'a service imports no handler, no test support and no HSM adapter (the Hsm port is in the core)',
      },
    ],
  ),
  ...layer(
    ['lambdas/handlers/**/*.ts'],
    [
      {
        regex: '(^|/)(test-support|scripts)(/|$)',
        message: 'production code imports no test support or tooling',
      },
    ],
  ),
  ...layer(
    ['lambdas/config/src/**/*.ts', 'lambdas/resources/src/**/*.ts', 'cdk/**/*.ts'],
    [
      {
        regex: '(^|/)(test-support|scripts|handlers)(/|$)',
        message: 'the CDK app and the configuration import no handler, test support or tooling',
      },
    ],
  ),
);

/** no-restricted-imports for the files of one layer, tests excepted (they may reach across layers). */
function layer(files, patterns) {
  return [
    {
      files,
      ignores: ['**/tests/**', '**/*.test.ts'],
      rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns }] },
    },
  ];
}
