/**
 * `npm run bench -- hsm [--n N]`: raw HSM costs per key type, measured in one run against the local
 * SoftHSM token: keygen, wrap, unwrap and sign medians, and keygen / (unwrap + sign), the factor the key
 * pool buys per request.
 */
import { createHash } from 'node:crypto';
import { KEY_TYPES, defaultSignatureAlgorithm, type KeyType } from '@pipeline/core/shared';
import { loadConfig } from '@pipeline/config';
import { connectHsm } from '@pipeline/adapters/hsm';
import { finish, option, printTable, type Row } from './report';
import { median, msSince, percentile, round } from './stats';

export async function run(args: string[]): Promise<void> {
  const n = Number(option(args, 'n') ?? 30);
  const config = loadConfig(process.env);
  // One session: operations are timed one at a time, as a single request would see them.
  const hsm = await connectHsm({ ...config.hsm, sessionPoolSize: 1 });
  const digest = createHash('sha256').update('bench').digest();
  const rows: Row[] = [];
  const figures: Record<string, unknown> = {};
  try {
    for (const keyType of KEY_TYPES) {
      // RSA-4096 keygen takes seconds in SoftHSM: fewer samples keep the suite short.
      const samples = keyType === 'RSA-4096' ? Math.max(3, Math.floor(n / 6)) : n;
      const t = {
        keygen: [] as number[],
        wrap: [] as number[],
        unwrap: [] as number[],
        sign: [] as number[],
      };
      const signatureAlgorithm = defaultSignatureAlgorithm(keyType as KeyType);
      for (let i = 0; i < samples; i++) {
        let start = process.hrtime.bigint();
        const pair = await hsm.generateKeyPair(keyType, { extractable: true });
        t.keygen.push(msSince(start));
        start = process.hrtime.bigint();
        const wrapped = await hsm.wrapPrivateKey(pair.privateKey, config.hsm.wrapKeyLabel);
        t.wrap.push(msSince(start));
        await hsm.destroy(pair.privateKey);
        start = process.hrtime.bigint();
        const key = await hsm.unwrapPrivateKey(wrapped, keyType, config.hsm.wrapKeyLabel);
        t.unwrap.push(msSince(start));
        start = process.hrtime.bigint();
        await hsm.signDigest(key, digest, { digestAlgorithm: 'SHA-256', signatureAlgorithm });
        t.sign.push(msSince(start));
        await hsm.destroy(key);
      }
      const m = {
        keygen: median(t.keygen),
        wrap: median(t.wrap),
        unwrap: median(t.unwrap),
        sign: median(t.sign),
      };
      const ratio = m.keygen / (m.unwrap + m.sign);
      rows.push({
        keyType,
        samples,
        'keygen ms': round(m.keygen),
        'keygen p99': round(percentile(t.keygen, 99)),
        'wrap ms': round(m.wrap),
        'unwrap ms': round(m.unwrap),
        'sign ms': round(m.sign),
        'keygen/(unwrap+sign)': round(ratio, 1),
      });
      figures[keyType] = {
        samples,
        signatureAlgorithm,
        medianMs: Object.fromEntries(Object.entries(m).map(([k, v]) => [k, round(v)])),
        keygenP99Ms: round(percentile(t.keygen, 99)),
        keygenOverUnwrapPlusSign: round(ratio, 2),
      };
    }
  } finally {
    await hsm.close();
  }
  printTable(`HSM costs per key type (SoftHSM, one session, medians of ${n} runs)`, rows);
  finish('hsm', { keyTypes: figures });
}
