/**
 * Every runtime dependency is one the code uses, and the functions' code uses no package that is only a
 * development dependency (esbuild would bundle it, but nothing would pin or audit it as runtime code).
 */
import { builtinModules } from 'node:module';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import packageJson from '../package.json';

const ROOT = join(__dirname, '..');

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)))
    .filter((file) => !/(^|\/)(tests|test-support)\//.test(file) && !file.endsWith('.test.ts'));
}

/** Packages a file imports at run time (type-only imports are erased by the compiler), or at all. */
function packagesOf(file: string, options: { types?: boolean } = {}): Set<string> {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const found = new Set<string>();
  const notType = options.types ? '' : '(?!type\\b)';
  const patterns = [
    new RegExp(`^\\s*import\\s+${notType}[^;]*?from\\s+'([^']+)'`, 'gm'),
    new RegExp(`^\\s*export\\s+${notType}[^;]*?from\\s+'([^']+)'`, 'gm'),
    /\bimport\(\s*'([^']+)'\s*\)/g,
    /\brequire\(\s*'([^']+)'\s*\)/g,
  ];
  for (const pattern of patterns) {
    for (const match of text.matchAll(pattern)) {
      const specifier = match[1];
      // Relative paths, Node.js built-ins and this repository's own packages (@pipeline/*, tsconfig paths).
      if (
        specifier.startsWith('.') ||
        specifier.startsWith('node:') ||
        specifier.startsWith('@pipeline/') ||
        builtinModules.includes(specifier)
      )
        continue;
      const parts = specifier.split('/');
      found.add(specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]);
    }
  }
  return found;
}

const runtime = Object.keys(packageJson.dependencies);
const development = Object.keys(packageJson.devDependencies);

test('every runtime dependency is imported by the code that ships or runs (not only by tests)', () => {
  const used = new Set(
    [...sources('lambdas'), ...sources('scripts'), ...sources('cdk')].flatMap((f) => [...packagesOf(f)]),
  );
  expect(runtime.filter((name) => !used.has(name))).toEqual([]);
});

test("the functions' code imports runtime dependencies only", () => {
  const offending = sources('lambdas').flatMap((file) =>
    [...packagesOf(file)].filter((name) => !runtime.includes(name)).map((name) => `${file}: ${name}`),
  );
  expect(offending).toEqual([]);
  // And nothing is declared twice.
  expect(runtime.filter((name) => development.includes(name))).toEqual([]);
});

test('every development dependency is used: imported anywhere (tests too), run by a script or config, or the types of something used', () => {
  const everything = ['lambdas', 'scripts', 'cdk', 'infra-tests', 'layers']
    .flatMap((dir) =>
      readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
        .filter((e) => e.isFile() && /\.(ts|js|mjs)$/.test(e.name))
        .map((e) => relative(ROOT, join(e.parentPath, e.name))),
    )
    .concat(['jest.config.js', 'eslint.config.mjs']);
  const imported = new Set(everything.flatMap((f) => [...packagesOf(f, { types: true })]));
  const tooling = [
    JSON.stringify(packageJson.scripts),
    ...[
      'jest.config.js',
      'eslint.config.mjs',
      'cdk.json',
      'scripts/bootstrap.sh',
      'scripts/local/faults/jest.config.js',
    ].map((f) => readFileSync(join(ROOT, f), 'utf8')),
  ].join('\n');
  const used = (name: string): boolean => {
    if (imported.has(name) || tooling.includes(name)) return true;
    // The CLI of aws-cdk is `cdk`, typescript's `tsc`, @stoplight/spectral-cli's `spectral`.
    const clis: Readonly<Record<string, RegExp>> = {
      'aws-cdk': /\bcdk /,
      typescript: /\btsc\b/,
      '@stoplight/spectral-cli': /\bspectral lint\b/,
    };
    if (clis[name]?.test(tooling)) return true;
    if (!name.startsWith('@types/')) return false;
    const typed = name.slice('@types/'.length);
    return typed === 'node' || typed === 'jest' ? true : imported.has(typed);
  };
  expect(development.filter((name) => !used(name))).toEqual([]);
});
