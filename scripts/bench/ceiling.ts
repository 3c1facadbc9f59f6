/**
 * `npm run bench -- ceiling [--seconds S]`: the machine's signing ceiling, so end-to-end rates can be
 * quoted as a fraction of it: `openssl speed` RSA-2048 / ECDSA P-256 signs per second (one process per
 * core), and the raw SoftHSM sign rate through our PKCS#11 adapter, one and `cores` concurrent sessions.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpus } from 'node:os';
import { defaultSignatureAlgorithm, type KeyType } from '@pipeline/core/shared';
import { loadConfig } from '@pipeline/config';
import { connectHsm } from '@pipeline/adapters/hsm';
import { finish, option, printTable, type Row } from './report';
import { round } from './stats';

/** Signs per second from `openssl speed -multi <cores>` for one algorithm. */
function opensslSpeed(algorithm: 'rsa2048' | 'ecdsap256', seconds: number, cores: number): number {
  const out = execFileSync(
    'openssl',
    ['speed', '-seconds', String(seconds), '-multi', String(cores), algorithm],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
  // Last table line: "rsa 2048 bits 0.000xs 0.000ys  sign/s verify/s"; sign/s is the second-to-last field.
  const line = out
    .trim()
    .split('\n')
    .filter((l) => /bits/.test(l))
    .pop();
  const fields = line?.trim().split(/\s+/) ?? [];
  const signsPerSecond = Number(fields[fields.length - 2]);
  if (!Number.isFinite(signsPerSecond))
    throw new Error(`could not parse openssl speed output for ${algorithm}`);
  return signsPerSecond;
}

export async function run(args: string[]): Promise<void> {
  const seconds = Number(option(args, 'seconds') ?? 3);
  const cores = cpus().length;
  const config = loadConfig(process.env);
  const hsm = await connectHsm({ ...config.hsm, sessionPoolSize: cores });
  const digest = createHash('sha256').update('ceiling').digest();
  const rows: Row[] = [];
  const figures: Record<string, unknown> = {};
  try {
    for (const keyType of ['RSA-2048', 'EC-P256'] as KeyType[]) {
      const signatureAlgorithm = defaultSignatureAlgorithm(keyType);
      const keys = await Promise.all(
        Array.from({ length: cores }, () => hsm.generateKeyPair(keyType, { extractable: false })),
      );
      const rates: Record<string, number> = {};
      for (const concurrency of [1, cores]) {
        let count = 0;
        const end = Date.now() + seconds * 1000;
        const started = process.hrtime.bigint();
        await Promise.all(
          keys.slice(0, concurrency).map(async (pair) => {
            while (Date.now() < end) {
              await hsm.signDigest(pair.privateKey, digest, {
                digestAlgorithm: 'SHA-256',
                signatureAlgorithm,
              });
              count++;
            }
          }),
        );
        const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
        rates[`softhsm x${concurrency}`] = count / elapsed;
      }
      await Promise.all(keys.map((k) => hsm.destroy(k.privateKey)));
      const openssl = opensslSpeed(keyType === 'RSA-2048' ? 'rsa2048' : 'ecdsap256', seconds, cores);
      const best = Math.max(...Object.values(rates));
      rows.push({
        keyType,
        [`openssl signs/s (${cores} procs)`]: round(openssl, 0),
        'softhsm signs/s x1': round(rates['softhsm x1'], 0),
        [`softhsm signs/s x${cores}`]: round(rates[`softhsm x${cores}`], 0),
        'softhsm / openssl': round(best / openssl, 3),
      });
      figures[keyType] = {
        opensslSignsPerSecond: round(openssl, 1),
        softhsmSignsPerSecond: Object.fromEntries(Object.entries(rates).map(([k, v]) => [k, round(v, 1)])),
        softhsmOverOpenssl: round(best / openssl, 3),
      };
    }
  } finally {
    await hsm.close();
  }
  printTable(`Signing ceiling of this machine (${cores} cores, ${seconds} s per figure)`, rows);
  finish('ceiling', { cores, seconds, keyTypes: figures });
}
