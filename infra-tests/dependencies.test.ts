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

/** Packages a file imports at run time (type-only imports are erased by the compiler). */
function packagesOf(file: string): Set<string> {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const found = new Set<string>();
  const patterns = [
    /^\s*import\s+(?!type\b)[^;]*?from\s+'([^']+)'/gm,
    /^\s*export\s+(?!type\b)[^;]*?from\s+'([^']+)'/gm,
    /\bimport\(\s*'([^']+)'\s*\)/g,
    /\brequire\(\s*'([^']+)'\s*\)/g,
  ];
  for (const pattern of patterns) {
    for (const match of text.matchAll(pattern)) {
      const specifier = match[1];
      if (specifier.startsWith('.') || specifier.startsWith('node:') || builtinModules.includes(specifier))
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
