/**
 * Processes that connect to one SoftHSM token at the same moment, as two Jest workers (or a runner's
 * consumers) do. SoftHSM rewrites the token file on every login and, in 2.6.1, writes it after releasing
 * its own file lock, so an unserialised pair of processes that connect and log in in a loop fails
 * CKR_GENERAL_ERROR (or misses the token) dozens of times a second; the adapter's cross-process lock
 * (token-file-lock.ts) makes that none. The processes use a copy of the local tokens, so that nothing
 * here can touch the token the other tests use.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { localToken } from '../../../../scripts/local/token';
import { softhsmLockPath, withTokenFileLock } from '../src/token-file-lock';

const TSX = join(__dirname, '../../../../node_modules/.bin/tsx');
const token = localToken();
let dir: string;
let conf: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'softhsm-logins-'));
  cpSync(token.tokenDir, join(dir, 'tokens'), { recursive: true });
  conf = join(dir, 'softhsm2.conf');
  writeFileSync(
    conf,
    `directories.tokendir = ${join(dir, 'tokens')}\nobjectstore.backend = file\nlog.level = ERROR\n`,
  );
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** A process that connects, logs in and closes for `ms`; its tally of successes and failures by code. */
async function connectLoop(ms: number): Promise<{ ok: number; failed: Record<string, number> }> {
  const script = `
    const { Pkcs11Hsm } = require(${JSON.stringify(require.resolve('../src'))});
    const pin = require('fs').readFileSync(${JSON.stringify(token.userPinFile)}, 'utf8').trim();
    (async () => {
      const tally = { ok: 0, failed: {} };
      for (const end = Date.now() + ${ms}; Date.now() < end; ) {
        try {
          const hsm = await Pkcs11Hsm.connect({ modulePath: '/usr/lib/softhsm/libsofthsm2.so',
            tokenLabel: ${JSON.stringify(token.label)}, profile: 'softhsm', sessionPoolSize: 1, pin });
          await hsm.close();
          tally.ok++;
        } catch (e) {
          tally.failed[e.code ?? e.name] = (tally.failed[e.code ?? e.name] ?? 0) + 1;
        }
      }
      console.log(JSON.stringify(tally));
    })();`;
  const { stdout } = await promisify(execFile)(TSX, ['-e', script], {
    env: { ...process.env, SOFTHSM2_CONF: conf },
    encoding: 'utf8',
  });
  return JSON.parse(stdout.trim().split('\n').pop()!) as { ok: number; failed: Record<string, number> };
}

test('two processes connecting and logging in at once for 4 s: every login succeeds', async () => {
  const results = await Promise.all([connectLoop(4000), connectLoop(4000)]);
  for (const result of results) {
    expect(result.failed).toEqual({});
    // Each got its turn many times (about 100 a second alone on a 2-core machine).
    expect(result.ok).toBeGreaterThan(20);
  }
  // Released after the last connection.
  expect(existsSync(softhsmLockPath({ SOFTHSM2_CONF: conf }))).toBe(false);
});

test('the lock sits beside the configured token directory; a lock left by a dead process is taken over', async () => {
  const lock = softhsmLockPath({ SOFTHSM2_CONF: conf });
  expect(lock).toBe(`${join(dir, 'tokens')}.login-lock`);
  // A process that held the lock and died (as a SIGKILL leaves it).
  const dead = await new Promise<number>((resolve) => {
    const child = execFile(process.execPath, ['-e', '0']);
    child.on('exit', () => resolve(child.pid!));
  });
  writeFileSync(lock, String(dead));
  const started = Date.now();
  expect(withTokenFileLock(lock, () => 'held')).toBe('held');
  expect(Date.now() - started).toBeLessThan(1000);
  expect(existsSync(lock)).toBe(false);
  // A live holder's lock (this process's pid) is waited for, until it is released (here by another
  // process, 300 ms on).
  writeFileSync(lock, String(process.pid));
  const child = execFile(process.execPath, [
    '-e',
    `setTimeout(() => require('fs').unlinkSync(${JSON.stringify(lock)}), 300)`,
  ]);
  const waitedFrom = Date.now();
  withTokenFileLock(lock, () => undefined);
  expect(Date.now() - waitedFrom).toBeGreaterThanOrEqual(250);
  await new Promise((resolve) => child.on('exit', resolve));
});
