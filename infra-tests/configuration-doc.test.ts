/**
 * docs/configuration.md lists every environment variable the code reads and every CDK context key the
 * app reads. Pure file scanning of the non-test TypeScript under lambdas/, scripts/ and cdk/: a variable
 * read in code but missing from the page fails this test, naming the variable and where it is read.
 *
 * What counts as reading a variable (NAME is UPPER_SNAKE_CASE):
 * - `process.env.NAME`, `process.env['NAME']`, and the same through an `env` parameter (`env.NAME`,
 *   `inputs.env.NAME`, `env['NAME']`), as the config modules take `env: Env = process.env`;
 * - a helper given the environment and the name: `str(env, 'NAME', ...)`, `int(env, 'NAME', ...)`,
 *   `oneOf<T>(inputs.env, 'NAME', ...)`, `list(env, 'NAME', ...)` and any other function of that shape;
 * - a helper with "env" in its name given the name: `intFromEnv('NAME', ...)`;
 * - `envVar: 'NAME'` in the resource definitions (table and queue names come from those variables);
 * - a name held in a variable first (`const name = 'NAME'; ... env[name]` or `str(env, name, ...)`);
 * - a name from the shared definition of names (lambdas/config/src/env-names.ts) in any of those places:
 *   `str(env, ENV.NAME, ...)`, `env[ENV.NAME]`, `const name = ENV.NAME; ... env[name]`;
 * - a computed name `env[`PREFIX_${...}`]`: the page must name the family as `PREFIX_<...>`.
 * Context keys: `tryGetContext('key')`, `ctx('key')` and helpers `f(ctx, 'key', ...)` in cdk/.
 * The page must hold each name in backticks (`NAME`), so a longer name never stands in for a shorter one.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ENV as SHARED_NAMES } from '@pipeline/config';

const ROOT = join(__dirname, '..');
const DOC = join(ROOT, 'docs', 'configuration.md');

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'tests') out.push(...sourceFiles(path));
    } else if (/\.ts$/.test(entry.name) && !/\.(test|d)\.ts$/.test(entry.name)) {
      out.push(path);
    }
  }
  return out;
}

const NAME = '([A-Z][A-Z0-9_]*[A-Z0-9])';
const QUOTED_NAME = `['"\`]${NAME}['"\`]`;
/** A name written out, or taken from the shared definition (`ENV.NAME`). */
const GIVEN_NAME = `(?:['"\`]|\\bENV\\.)${NAME}(?:['"\`]|\\b)`;
/** An environment object: `env`, `process.env`, `inputs.env`, `childEnv`. */
const ENV = '(?:[\\w?]+\\.)*(?:env|[a-z]\\w*Env)';

const DIRECT_READS = [
  new RegExp(`\\b(?:env|[a-z]\\w*Env)\\??\\.${NAME}\\b`, 'g'),
  new RegExp(`\\b(?:env|[a-z]\\w*Env)\\[\\s*${GIVEN_NAME}\\s*\\]`, 'g'),
  new RegExp(`\\b\\w+(?:<[^<>()]*>)?\\(\\s*${ENV}\\s*,\\s*${GIVEN_NAME}`, 'g'),
  new RegExp(`\\b\\w*(?:env|Env|ENV)\\w*\\(\\s*${QUOTED_NAME}`, 'g'),
  new RegExp(`\\benvVar\\s*:\\s*${QUOTED_NAME}`, 'g'),
];
/** `env[name]` or `str(env, name, ...)`: the name is in a variable. */
const INDIRECT_READS = [
  new RegExp(`\\b(?:env|[a-z]\\w*Env)\\[\\s*([a-z]\\w*)\\s*\\]`, 'g'),
  new RegExp(`\\b\\w+(?:<[^<>()]*>)?\\(\\s*${ENV}\\s*,\\s*([a-z]\\w*)\\s*[,)]`, 'g'),
];
const COMPUTED_READ = /\benv\[\s*`([A-Z][A-Z0-9_]*)\$\{/g;

const CONTEXT_READS = [
  /\btryGetContext\(\s*['"`]([A-Za-z][\w-]*)['"`]/g,
  /\bctx\(\s*['"`]([A-Za-z][\w-]*)['"`]/g,
  /\b\w+\(\s*ctx\s*,\s*['"`]([A-Za-z][\w-]*)['"`]/g,
];

type Found = Map<string, Set<string>>;

function add(found: Found, name: string, where: string): void {
  if (!found.has(name)) found.set(name, new Set());
  found.get(name)!.add(where);
}

function scan(): { variables: Found; prefixes: Found; contextKeys: Found } {
  const variables: Found = new Map();
  const prefixes: Found = new Map();
  const contextKeys: Found = new Map();
  for (const file of ['lambdas', 'scripts', 'cdk'].flatMap((dir) => sourceFiles(join(ROOT, dir)))) {
    const text = readFileSync(file, 'utf8');
    const where = relative(ROOT, file);
    for (const pattern of DIRECT_READS) {
      for (const match of text.matchAll(pattern)) add(variables, match[1], where);
    }
    for (const pattern of INDIRECT_READS) {
      for (const match of text.matchAll(pattern)) {
        const assigned = new RegExp(`\\b${match[1]}\\s*=\\s*${GIVEN_NAME}`, 'g');
        for (const value of text.matchAll(assigned)) add(variables, value[1], where);
      }
    }
    for (const match of text.matchAll(COMPUTED_READ)) add(prefixes, match[1], where);
    if (where.startsWith('cdk/')) {
      for (const pattern of CONTEXT_READS) {
        for (const match of text.matchAll(pattern)) add(contextKeys, match[1], where);
      }
    }
  }
  return { variables, prefixes, contextKeys };
}

function missing(found: Found, isListed: (name: string) => boolean): string[] {
  return [...found]
    .filter(([name]) => !isListed(name))
    .map(([name, files]) => `${name} (read in ${[...files].join(', ')})`)
    .sort();
}

const doc = readFileSync(DOC, 'utf8');
const { variables, prefixes, contextKeys } = scan();

test('the scanner finds the variables and context keys it is meant to find', () => {
  // One of each way of reading, so a scanner that stops matching fails here rather than passing empty.
  for (const name of [
    'LOCAL_PERSIST', // process.env.NAME
    'AWS_REGION', // env.NAME in a config module
    'HSM_PIN_SOURCE', // str(env, 'NAME', ...)
    'KEYGEN_POLICY', // oneOf<T>(inputs.env, 'NAME', ...)
    'IDP_PORT', // intFromEnv('NAME', ...)
    'AUDIT_TABLE_NAME', // envVar: 'NAME'
    'PKI_BASE_URL', // const name = 'NAME'; str(env, name, ...)
    'HSM_MODULE_PATH', // str(env, ENV.NAME, ...)
    'POOL_TARGETS', // env[ENV.NAME]
    'IDENTITY_CLIENT_KEYS', // const name = ENV.NAME; jsonArray(env, name)
    'IDENTITY_CLAIM_MAPPING', // const name = 'NAME'; env[name]
  ]) {
    expect([name, variables.has(name)]).toEqual([name, true]);
  }
  expect([...prefixes.keys()]).toContain('AWS_ENDPOINT_URL_');
  for (const key of ['hsmClusterId', 'signerScheduledScaling', 'allowPlaceholderLayer', 'identityIssuers']) {
    expect([key, contextKeys.has(key)]).toEqual([key, true]);
  }
  expect(variables.size).toBeGreaterThan(100);
  expect(contextKeys.size).toBeGreaterThan(25);
});

test('the scanner finds every shared name (ENV.NAME) where lambdas/config reads it', () => {
  const unread = Object.values(SHARED_NAMES).filter(
    (name) => ![...(variables.get(name) ?? [])].some((where) => where.startsWith('lambdas/config/src/')),
  );
  expect(unread).toEqual([]);
});

test('docs/configuration.md lists every environment variable the code reads', () => {
  expect(missing(variables, (name) => doc.includes(`\`${name}\``))).toEqual([]);
});

test('docs/configuration.md names every family of computed variable names', () => {
  expect(missing(prefixes, (prefix) => new RegExp(`\`${prefix}<[^>\`]+>\``).test(doc))).toEqual([]);
});

test('docs/configuration.md lists every CDK context key', () => {
  expect(missing(contextKeys, (key) => doc.includes(`\`${key}\``))).toEqual([]);
});
