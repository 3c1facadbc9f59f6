/**
 * One process at a time through SoftHSM's token loading and login, across processes.
 *
 * SoftHSM (file object store) rewrites a token's `token.object` on every C_Login (it clears
 * CKF_USER_PIN_COUNT_LOW in the token flags), and SoftHSM 2.6.1, Debian's, writes the file's new content
 * only after it has released its own fcntl lock on it (the buffered write is flushed when the file is
 * closed; upstream fixed that after 2.6.1: "Flush files before unlocking"). Another process that loads
 * or logs in to the same token in that window (C_Initialize, C_GetTokenInfo, C_Login read the file) reads
 * it empty or half written: its token is invalid and the call fails CKR_GENERAL_ERROR, or the token is
 * missing from the slot list. Two processes doing nothing but connect and log in, in a loop, meet it
 * dozens of times a second; one process never does, nor a process that only signs while another logs in.
 *
 * So every connection to a SoftHSM token (module initialisation, slot search, login) holds this lock: an
 * exclusively created file beside the token directory, naming its holder's pid. A holder that died
 * (SIGKILL in a fault test) leaves it behind; a waiter removes it when that pid is gone or the lock is
 * older than any login takes. CloudHSM needs none of this (the profile says so).
 */
import { closeSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';

const DEFAULT_CONF = '/etc/softhsm/softhsm2.conf';
/** Far longer than any login holds it (milliseconds): a lock this old is a leftover. */
const STALE_AFTER_MS = 30_000;
const GIVE_UP_AFTER_MS = 120_000;
const waitCell = new Int32Array(new SharedArrayBuffer(4));

/** The lock file of the SoftHSM configuration this process uses (SOFTHSM2_CONF, as SoftHSM reads it). */
export function softhsmLockPath(env: NodeJS.ProcessEnv = process.env): string {
  const conf = env.SOFTHSM2_CONF || DEFAULT_CONF;
  let tokenDir: string | undefined;
  try {
    tokenDir = /^\s*directories\.tokendir\s*=\s*(.+?)\s*$/m.exec(readFileSync(conf, 'utf8'))?.[1];
  } catch {
    // SoftHSM itself reports an unreadable configuration when the module is initialised
  }
  // Beside the token directory (SoftHSM reads only the directories in it), else beside the configuration.
  return tokenDir ? `${tokenDir.replace(/\/+$/, '')}.login-lock` : join(dirname(conf), '.softhsm-login-lock');
}

/** Runs `fn` (synchronous PKCS#11 calls) while holding the lock at `path`. */
export function withTokenFileLock<T>(path: string, fn: () => T): T {
  acquire(path);
  try {
    return fn();
  } finally {
    try {
      unlinkSync(path);
    } catch {
      // removed by a waiter that judged it stale: nothing to release
    }
  }
}

function acquire(path: string): void {
  const started = Date.now();
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      try {
        writeSync(fd, String(process.pid));
      } finally {
        closeSync(fd);
      }
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    if (isStale(path)) {
      try {
        unlinkSync(path);
      } catch {
        // another waiter removed it first
      }
      continue;
    }
    if (Date.now() - started > GIVE_UP_AFTER_MS) {
      throw new Error(`the SoftHSM login lock ${path} stayed taken for ${GIVE_UP_AFTER_MS} ms`);
    }
    // A login takes a few milliseconds: wait about that long (synchronously, as the PKCS#11 calls are).
    Atomics.wait(waitCell, 0, 0, Math.min(1 + attempt, 10));
  }
}

function isStale(path: string): boolean {
  let holder: number;
  let age: number;
  try {
    holder = Number(readFileSync(path, 'utf8'));
    age = Date.now() - statSync(path).mtimeMs;
  } catch {
    return false; // gone already: the next attempt takes it
  }
  if (age > STALE_AFTER_MS) return true;
  // Created but its pid not written yet: a live holder a moment old.
  if (!Number.isInteger(holder) || holder <= 0) return false;
  try {
    process.kill(holder, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
