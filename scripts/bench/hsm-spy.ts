/**
 * HSM operations counted by kind: OpenSC's pkcs11-spy (Debian's opensc-pkcs11) stands between the
 * pipeline and SoftHSM and logs every PKCS#11 call; the bench reads the log between two offsets. The spy's
 * logging costs CPU, so a run that counts HSM operations says so and its CPU figures are not compared.
 */
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SPY = '/usr/lib/x86_64-linux-gnu/pkcs11-spy.so';
/** The PKCS#11 functions reported: the operations, not the session and object bookkeeping around them. */
const HSM_OPERATIONS =
  /^C_(Sign|Verify|UnwrapKey|WrapKey|GenerateKeyPair|GenerateKey|DestroyObject|Encrypt|Decrypt|Digest|GenerateRandom|DeriveKey)$/;

/**
 * Puts the spy in front of the configured module for the pipelines this process starts, when the spy is
 * installed: the log's path, or undefined (and a line saying why) without it. The caller's process
 * starts one pipeline and ends, so the environment needs no restoring.
 */
export function spyOnHsm(name: string): string | undefined {
  if (!existsSync(SPY)) {
    console.log(`no ${SPY} (Debian's opensc-pkcs11): no HSM operation counts`);
    return undefined;
  }
  const log = join(tmpdir(), `bench-${name}-pkcs11-spy-${process.pid}.log`);
  process.env.PKCS11SPY = process.env.HSM_MODULE_PATH;
  process.env.HSM_MODULE_PATH = SPY;
  process.env.PKCS11SPY_OUTPUT = log;
  return log;
}

/** Where the log ends now: the offset to count from. */
export function hsmLogEnd(log: string): number {
  return existsSync(log) ? statSync(log).size : 0;
}

/** Counts of PKCS#11 operations in the spy's log from `from` on (its lines `<n>: C_<function>`). */
export function hsmCalls(log: string, from: number): { counts: Record<string, number>; end: number } {
  if (!existsSync(log)) return { counts: {}, end: from };
  const end = statSync(log).size;
  const buffer = Buffer.alloc(end - from);
  const fd = openSync(log, 'r');
  try {
    readSync(fd, buffer, 0, buffer.length, from);
  } finally {
    closeSync(fd);
  }
  const counts: Record<string, number> = {};
  for (const m of buffer.toString('latin1').matchAll(/^\d+: (C_\w+)$/gm)) {
    if (HSM_OPERATIONS.test(m[1])) counts[m[1]] = (counts[m[1]] ?? 0) + 1;
  }
  return { counts, end };
}
