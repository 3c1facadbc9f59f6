/**
 * `npm run bench -- audit [--n N] [--concurrency C]`: what the audit log's guarantees cost, measured in
 * one run against DynamoDB Local and the SoftHSM audit key:
 *
 *   - one request's events (3) appended alone, with and without the audit key's signature over the new
 *     chain head (what every receipt carries), in alternation so both see the same machine;
 *   - C requests appending at once (one process: they share entries), with and without signed heads;
 *   - one checkpointer round: every chain head read, a checkpoint signed, stored and anchored in a
 *     directory (S3 on AWS costs a PUT more).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { documentClient, dynamoDbClient } from '@pipeline/adapters/aws';
import { fileAnchorStore } from '@pipeline/adapters/anchors';
import { AuditRepository } from '@pipeline/adapters/dynamodb';
import { connectHsm } from '@pipeline/adapters/hsm';
import { AuditLog, hsmAuditSigner } from '@pipeline/audit';
import { loadAuditConfig, loadConfig } from '@pipeline/config';
import type { AuditEvent } from '@pipeline/core/audit';
import { TABLES } from '@pipeline/resources';
import { ensureTables } from '../local/resources';
import { startStandIns, type StandIns } from '../local/stand-ins';
import { finish, option, printTable, type Row } from './report';
import { median, msSince, percentile, round } from './stats';

const hex = (s: string): string => createHash('sha256').update(s).digest('hex');

/** The three events a signed pooled request appends. */
function requestEvents(i: number): AuditEvent[] {
  const requestId = `bench-${i}`;
  const keyId = `key-${i}`;
  return [
    { type: 'pool.key-claimed', keyId, requestId },
    { type: 'signature.made', requestId, signatureHash: hex(`s${i}`), keySpkiHash: hex(`k${i}`), keyId },
    { type: 'pool.key-destroyed', keyId, requestId },
  ];
}

type Writers = Readonly<Record<'signed' | 'unsigned', AuditLog>>;
type PerWriter = Record<'signed' | 'unsigned', number[]>;
/** The next request's events (a counter over the whole run: every request is a new one). */
type NextEvents = () => AuditEvent[];

export async function run(args: string[]): Promise<void> {
  const n = Number(option(args, 'n') ?? '200');
  const concurrency = Number(option(args, 'concurrency') ?? '50');
  if (!Number.isInteger(n) || n < 10 || !Number.isInteger(concurrency) || concurrency < 1) {
    throw new Error('usage: npm run bench -- audit [--n <count, at least 10>] [--concurrency <c>]');
  }
  let standIns: StandIns | undefined;
  if (!process.env.AWS_ENDPOINT_URL_DYNAMODB && !process.env.AWS_ENDPOINT_URL) {
    standIns = await startStandIns();
    Object.assign(process.env, standIns.env());
  }
  const config = loadConfig(process.env);
  const audit = loadAuditConfig(process.env);
  const table = `${TABLES.audit.localName}-bench-${randomBytes(4).toString('hex')}`;
  const raw = dynamoDbClient(config.aws);
  await ensureTables(raw, [TABLES.audit], { [TABLES.audit.envVar]: table });
  raw.destroy();
  const doc = documentClient(config.aws);
  const hsm = await connectHsm(config.hsm, config.aws);
  const anchorsDir = mkdtempSync(join(tmpdir(), 'bench-anchors-'));
  let counter = 0;
  const next: NextEvents = () => requestEvents(counter++);
  try {
    const store = new AuditRepository(doc, { tableName: table });
    const signer = await hsmAuditSigner(hsm, audit.keyLabel);
    // Fixed chains, so the two writers never race each other for a head.
    const writers: Writers = {
      signed: new AuditLog(store, { chains: audit.chains, chain: 0, signer }),
      unsigned: new AuditLog(store, { chains: audit.chains, chain: 1, signer, signHeads: false }),
    };
    for (const log of [writers.signed, writers.unsigned]) {
      for (let i = 0; i < 10; i++) await log.appendMany(next());
    }
    const alone = await appendsAlone(writers, n, next);
    const { bursts, burstP95 } = await appendBursts(writers, concurrency, next);
    const checkpointer = new AuditLog(store, {
      chains: audit.chains,
      signer,
      anchors: fileAnchorStore(anchorsDir),
    });
    const { rounds, idle } = await checkpointRounds(checkpointer, writers.signed, Math.min(n, 100), next);
    report({ n, concurrency, alone, bursts, burstP95, rounds, idle });
  } finally {
    await hsm.close();
    doc.destroy();
    rmSync(anchorsDir, { recursive: true, force: true });
    await standIns?.stop();
  }
}

/** The two writers in turn `i`'s order: signed first in even turns, unsigned first in odd ones. */
function inTurns(i: number, writers: Writers): ReadonlyArray<readonly ['signed' | 'unsigned', AuditLog]> {
  return i % 2
    ? [
        ['unsigned', writers.unsigned],
        ['signed', writers.signed],
      ]
    : [
        ['signed', writers.signed],
        ['unsigned', writers.unsigned],
      ];
}

/** One request's events appended alone, `n` times per writer taking turns; each append's time. */
async function appendsAlone(writers: Writers, n: number, next: NextEvents): Promise<PerWriter> {
  const alone: PerWriter = { signed: [], unsigned: [] };
  for (let i = 0; i < n; i++) {
    for (const [name, log] of inTurns(i, writers)) {
      const start = process.hrtime.bigint();
      await log.appendMany(next());
      alone[name].push(msSince(start));
    }
  }
  return alone;
}

/**
 * C requests at once in one process: their appends share entries (one transaction, one signature). Six
 * rounds per writer taking turns; each burst's wall time and its requests' p95.
 */
async function appendBursts(
  writers: Writers,
  concurrency: number,
  next: NextEvents,
): Promise<{ bursts: PerWriter; burstP95: PerWriter }> {
  const burst = async (log: AuditLog): Promise<{ wallMs: number; p50: number; p95: number }> => {
    const each: number[] = [];
    const start = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        const t = process.hrtime.bigint();
        await log.appendMany(next());
        each.push(msSince(t));
      }),
    );
    return { wallMs: msSince(start), p50: median(each), p95: percentile(each, 95) };
  };
  const bursts: PerWriter = { signed: [], unsigned: [] };
  const burstP95: PerWriter = { signed: [], unsigned: [] };
  for (let round = 0; round < 6; round++) {
    for (const [name, log] of inTurns(round, writers)) {
      const r = await burst(log);
      bursts[name].push(r.wallMs);
      burstP95[name].push(r.p95);
    }
  }
  return { bursts, burstP95 };
}

/** Checkpointer rounds: one per append, as under steady load (`count` of them), then 20 with nothing moved. */
async function checkpointRounds(
  checkpointer: AuditLog,
  writer: AuditLog,
  count: number,
  next: NextEvents,
): Promise<{ rounds: number[]; idle: number[] }> {
  const rounds: number[] = [];
  for (let i = 0; i < count; i++) {
    await writer.appendMany(next());
    const start = process.hrtime.bigint();
    await checkpointer.checkpointIfMoved();
    rounds.push(msSince(start));
  }
  const idle: number[] = [];
  for (let i = 0; i < 20; i++) {
    const start = process.hrtime.bigint();
    await checkpointer.checkpointIfMoved();
    idle.push(msSince(start));
  }
  return { rounds, idle };
}

/** Prints the table and the signed/unsigned ratios, and writes the result file. */
function report(r: {
  n: number;
  concurrency: number;
  alone: PerWriter;
  bursts: PerWriter;
  burstP95: PerWriter;
  rounds: number[];
  idle: number[];
}): void {
  const { n, concurrency, alone, bursts, burstP95, rounds, idle } = r;
  const rows: Row[] = [
    ...(['unsigned', 'signed'] as const).map((name) => ({
      case: `one request alone, ${name} head`,
      samples: alone[name].length,
      'p50 ms': round(median(alone[name]), 2),
      'p95 ms': round(percentile(alone[name], 95), 2),
    })),
    ...(['unsigned', 'signed'] as const).map((name) => ({
      case: `${concurrency} requests at once, ${name} head`,
      samples: bursts[name].length,
      'p50 ms': round(median(bursts[name]), 2),
      'p95 ms': round(median(burstP95[name]), 2),
    })),
    {
      case: 'checkpointer round (heads moved)',
      samples: rounds.length,
      'p50 ms': round(median(rounds), 2),
      'p95 ms': round(percentile(rounds, 95), 2),
    },
    {
      case: 'checkpointer round (nothing moved)',
      samples: idle.length,
      'p50 ms': round(median(idle), 2),
      'p95 ms': round(percentile(idle, 95), 2),
    },
  ];
  printTable(
    `Audit log costs (DynamoDB Local, SoftHSM audit key; burst rows: wall time of the burst / median request p95)`,
    rows,
  );
  const ratio = median(alone.signed) / median(alone.unsigned);
  const burstRatio = median(bursts.signed) / median(bursts.unsigned);
  console.log(
    `signed heads: one request ${round(ratio, 2)}x (+${round(median(alone.signed) - median(alone.unsigned), 2)} ms p50), ` +
      `${concurrency} at once ${round(burstRatio, 2)}x`,
  );
  finish('audit', {
    n,
    concurrency,
    aloneMs: {
      unsigned: { p50: round(median(alone.unsigned), 2), p95: round(percentile(alone.unsigned, 95), 2) },
      signed: { p50: round(median(alone.signed), 2), p95: round(percentile(alone.signed, 95), 2) },
    },
    burstWallMs: { unsigned: round(median(bursts.unsigned), 2), signed: round(median(bursts.signed), 2) },
    signedOverUnsigned: { alone: round(ratio, 3), burst: round(burstRatio, 3) },
    checkpointRoundMs: { p50: round(median(rounds), 2), p95: round(percentile(rounds, 95), 2) },
    idleRoundMs: { p50: round(median(idle), 2) },
  });
}
