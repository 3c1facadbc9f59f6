/**
 * The set-up installs with npm running on the project's own Node.js (scripts/npm-pinned.sh, which the
 * bootstrap's `npm ci` and `npm rebuild` go through), whatever Node.js the machine has: no dependency's
 * engines field (puppeteer-core wants Node.js >= 22.12) makes npm warn EBADENGINE. Run with the machine's
 * PATH, as the bootstrap is (npm scripts put node_modules/.bin, the pinned Node.js, first).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

jest.setTimeout(180_000);

const ROOT = join(__dirname, '..');
const pinned = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    devDependencies: Record<string, string>;
  }
).devDependencies.node;
const machinePath = (process.env.PATH ?? '')
  .split(':')
  .filter((dir) => !dir.endsWith('/node_modules/.bin'))
  .join(':');

function npmPinned(args: string[]): string {
  return execFileSync('bash', ['scripts/npm-pinned.sh', ...args], {
    cwd: ROOT,
    env: { ...process.env, PATH: machinePath },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

test('npm itself runs on the pinned Node.js', () => {
  const versions = JSON.parse(npmPinned(['version', '--json'])) as Record<string, string>;
  expect(versions.node).toBe(pinned);
});

test("npm ci (a dry run of the bootstrap's) names no unsupported engine", () => {
  const out = execFileSync(
    'bash',
    ['-c', 'bash scripts/npm-pinned.sh ci --dry-run --no-audit --no-fund 2>&1'],
    {
      cwd: ROOT,
      env: { ...process.env, PATH: machinePath },
      encoding: 'utf8',
    },
  );
  expect(out).not.toMatch(/EBADENGINE|Unsupported engine/);
  expect(out).toMatch(/up to date|added|changed|removed/);
});
