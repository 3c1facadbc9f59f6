/**
 * `npm run bench -- pool [--n 30] [--key-type RSA-2048]`: per-request cost of the pool path against the
 * on-the-fly path, measured in one run against the local stand-ins (DynamoDB Local, SoftHSM).
 *
 * Both paths run the real signing core one request at a time (processSignRequest: request record
 * transitions, claim or keygen, sign, CSR signed by the same key, certificate, destroy). Reported per
 * path: median and p99 of
 *   - key + sign: key acquisition (claim + unwrap, or keygen) plus the document signature, the part the
 *     pool exists to speed up;
 *   - request: the whole request as the signer sees it (adds record reads/writes, CSR and issuing, which
 *     cost the same on both paths).
 * The certificate comes from the in-process test issuer (lambdas/test-support), which costs one
 * DynamoDB read and a local ECDSA signature, so the CA's own cost is not part of either path.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { documentClient, dynamoDbClient } from '../../lambdas/adapters/aws/src';
import { KeyPoolRepository, RequestRepository } from '../../lambdas/adapters/dynamodb/src';
import { connectHsm } from '../../lambdas/adapters/hsm/src';
import { loadConfig } from '../../lambdas/config/src';
import {
  InMemoryPoolMetrics,
  defaultSignatureAlgorithm,
  fillPool,
  isKeyType,
  processSignRequest,
  type SignRequestRecord,
  type SigningDeps,
} from '../../lambdas/core/src';
import { buildCsr } from '../../lambdas/pki/src';
import { TABLES, ensureTables } from '../../lambdas/resources/src';
import { TestCertificateIssuer } from '../../lambdas/test-support/test-issuer';
import { startStandIns, type StandIns } from '../local/stand-ins';
import { finish, printTable, type Row } from './report';
import { median, msSince, percentile, round } from './stats';

const WARM_UP = 3;

function option(args: string[], name: string, fallback: string): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : fallback;
}

interface Sample {
  readonly requestMs: number;
  readonly keyAndSignMs: number;
  readonly acquireKeyMs: number;
}

export async function run(args: string[]): Promise<void> {
  const n = Number(option(args, 'n', '30'));
  const keyType = option(args, 'key-type', 'RSA-2048');
  if (!isKeyType(keyType) || !Number.isInteger(n) || n < 1) {
    throw new Error('usage: npm run bench -- pool [--n <count>] [--key-type RSA-2048|...]');
  }
  // Stand-ins only when no endpoint is configured; fresh table names so nothing else is disturbed.
  let standIns: StandIns | undefined;
  if (!process.env.AWS_ENDPOINT_URL_DYNAMODB && !process.env.AWS_ENDPOINT_URL) {
    standIns = await startStandIns();
    Object.assign(process.env, standIns.env());
  }
  const suffix = randomBytes(4).toString('hex');
  process.env[TABLES.keyPool.envVar] = `${TABLES.keyPool.localName}-bench-${suffix}`;
  process.env[TABLES.requests.envVar] = `${TABLES.requests.localName}-bench-${suffix}`;
  const config = loadConfig();
  const raw = dynamoDbClient(config.aws);
  await ensureTables(raw, [TABLES.keyPool, TABLES.requests]);
  raw.destroy();

  const doc = documentClient(config.aws);
  // One session: requests run one at a time, as a single request would see the HSM.
  const hsm = await connectHsm({ ...config.hsm, sessionPoolSize: 1 }, config.aws);
  const pool = new KeyPoolRepository(doc, {
    tableName: process.env[TABLES.keyPool.envVar]!,
    shards: config.pool.shards,
  });
  const requests = new RequestRepository(doc, { tableName: process.env[TABLES.requests.envVar]! });
  const metrics = new InMemoryPoolMetrics();
  const deps: SigningDeps = {
    requests,
    pool,
    hsm,
    buildCsr,
    issuer: new TestCertificateIssuer(requests),
    metrics,
    settings: {
      emptyPoolPolicy: 'fallback',
      retryAfterSeconds: config.pool.retryAfterSeconds,
      leaseMs: config.requests.attemptLeaseSeconds * 1000,
      hsmProfile: config.hsm.profile,
    },
  };

  const oneRequest = async (): Promise<Sample & { pooled: boolean }> => {
    const now = Date.now();
    const record: SignRequestRecord = {
      id: randomUUID(),
      clientId: 'bench',
      status: 'received',
      digest: createHash('sha256').update(randomUUID()).digest('base64'),
      digestAlgorithm: 'SHA-256',
      keyType,
      signatureAlgorithm: defaultSignatureAlgorithm(keyType),
      signer: {
        commonName: 'Bo Bench',
        givenName: 'Bo',
        surname: 'Bench',
        serialNumber: '190001010000',
        country: 'SE',
      },
      receivedAt: now,
      expiresAt: Math.floor(now / 1000) + 3600,
    };
    await requests.create(record);
    const start = process.hrtime.bigint();
    const outcome = await processSignRequest(deps, record.id);
    const requestMs = msSince(start);
    if (outcome.status !== 'signed' || !outcome.stages) throw new Error(`bench request ${outcome.status}`);
    return {
      requestMs,
      acquireKeyMs: outcome.stages.acquireKeyMs,
      keyAndSignMs: outcome.stages.acquireKeyMs + outcome.stages.signMs,
      pooled: outcome.record.pooledKey === true,
    };
  };

  const measure = async (count: number, expectPooled: boolean): Promise<Sample[]> => {
    const samples: Sample[] = [];
    for (let i = 0; i < count + WARM_UP; i++) {
      const s = await oneRequest();
      if (s.pooled !== expectPooled) throw new Error('the pool path and the fallback path got mixed up');
      if (i >= WARM_UP) samples.push(s);
    }
    return samples;
  };

  let fillMs = 0;
  let poolPath: Sample[];
  let flyPath: Sample[];
  try {
    const fillStart = process.hrtime.bigint();
    const filled = await fillPool(
      { hsm, pool, metrics },
      {
        keyType,
        count: n + WARM_UP,
        parallelism: 1,
        deadline: Date.now() + 10 * 60_000,
        wrapKeyLabel: config.hsm.wrapKeyLabel,
        hsmProfile: config.hsm.profile,
        maxAgeSeconds: config.pool.keyMaxAgeSeconds,
      },
    );
    fillMs = msSince(fillStart);
    if (filled.stored !== n + WARM_UP) throw new Error(`pool fill stored ${filled.stored} of ${n + WARM_UP}`);
    poolPath = await measure(n, true);
    // The pool is now empty: the same requests take the on-the-fly path (fallback policy).
    flyPath = await measure(n, false);
  } finally {
    await hsm.close();
    doc.destroy();
    await standIns?.stop();
  }

  const stat = (samples: Sample[], key: keyof Sample) => ({
    median: median(samples.map((s) => s[key])),
    p99: percentile(
      samples.map((s) => s[key]),
      99,
    ),
  });
  const figures = {
    pool: {
      keyAndSign: stat(poolPath, 'keyAndSignMs'),
      request: stat(poolPath, 'requestMs'),
      acquireKey: stat(poolPath, 'acquireKeyMs'),
    },
    onTheFly: {
      keyAndSign: stat(flyPath, 'keyAndSignMs'),
      request: stat(flyPath, 'requestMs'),
      acquireKey: stat(flyPath, 'acquireKeyMs'),
    },
  };
  const ratio = (what: 'keyAndSign' | 'request' | 'acquireKey', which: 'median' | 'p99') =>
    figures.onTheFly[what][which] / figures.pool[what][which];
  const rows: Row[] = (['acquireKey', 'keyAndSign', 'request'] as const).map((what) => ({
    measure: { acquireKey: 'key acquisition', keyAndSign: 'key + sign', request: 'whole request' }[what],
    'pool median ms': round(figures.pool[what].median, 2),
    'pool p99 ms': round(figures.pool[what].p99, 2),
    'on-the-fly median ms': round(figures.onTheFly[what].median, 2),
    'on-the-fly p99 ms': round(figures.onTheFly[what].p99, 2),
    'ratio (median)': round(ratio(what, 'median'), 1),
  }));
  printTable(
    `Pool path vs on-the-fly path, ${keyType}, ${n} sequential requests each (after ${WARM_UP} warm-up)`,
    rows,
  );
  const target = 50;
  console.log(
    `\nkey + sign: pool ${round(ratio('keyAndSign', 'median'), 1)}x faster (target ${target}x); ` +
      `whole request: ${round(ratio('request', 'median'), 1)}x. Pool fill: ${round(fillMs / (n + WARM_UP), 1)} ms/key.`,
  );
  const rounded = (o: { median: number; p99: number }) => ({
    median: round(o.median, 3),
    p99: round(o.p99, 3),
  });
  finish('pool', {
    keyType,
    requestsPerPath: n,
    warmUp: WARM_UP,
    pool: Object.fromEntries(Object.entries(figures.pool).map(([k, v]) => [k, rounded(v)])),
    onTheFly: Object.fromEntries(Object.entries(figures.onTheFly).map(([k, v]) => [k, rounded(v)])),
    ratioMedian: {
      acquireKey: round(ratio('acquireKey', 'median'), 2),
      keyAndSign: round(ratio('keyAndSign', 'median'), 2),
      request: round(ratio('request', 'median'), 2),
    },
    ratioP99: {
      keyAndSign: round(ratio('keyAndSign', 'p99'), 2),
      request: round(ratio('request', 'p99'), 2),
    },
    targetRatio: target,
    fillMsPerKey: round(fillMs / (n + WARM_UP), 2),
    loadAverage: require('node:os').loadavg(), // eslint-disable-line @typescript-eslint/no-require-imports
  });
}
