/**
 * The checkpointer against an attacker who can write the audit table (DynamoDB Local, the SoftHSM audit
 * key): heads set back, or another entry where the last checkpoint recorded the head, are never signed
 * over. The run fails, counts `AuditHeadsRewound` (the alarm's metric) and writes and anchors nothing;
 * heads that only moved forward are checkpointed as before.
 */
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import { fileAnchorStore } from '@pipeline/adapters/anchors';
import { documentClient } from '@pipeline/adapters/aws';
import { AuditRepository } from '@pipeline/adapters/dynamodb';
import { connectHsm, type Pkcs11Hsm } from '@pipeline/adapters/hsm';
import { AuditLog, hsmAuditSigner } from '@pipeline/audit';
import { loadAuditConfig, loadConfig } from '@pipeline/config';
import {
  auditEntryPk,
  auditHeadPk,
  auditSequenceSk,
  buildEntry,
  type AuditSigner,
} from '@pipeline/core/audit';
import { eventsFor } from '../../../audit/tests/helpers';
import { restoreEnvAfterAll } from '../../../test-support/env';
import { stdoutOf } from '../../../test-support/stdout';
import { createTestTables } from '../../../../scripts/local/resources';
import { createAuditCheckpointHandler } from '../handler';

restoreEnvAfterAll();
process.env.POWERTOOLS_METRICS_DISABLED = 'false';
delete process.env.POWERTOOLS_DEV;

const CHAINS = 2;
const config = loadConfig(process.env);
let doc: DynamoDBDocumentClient;
let hsm: Pkcs11Hsm;
let audit: AuditSigner;

beforeAll(async () => {
  doc = documentClient(config.aws);
  hsm = await connectHsm(config.hsm);
  audit = await hsmAuditSigner(hsm, loadAuditConfig(process.env).keyLabel);
});

afterAll(async () => {
  doc?.destroy();
  await hsm?.close();
});

/** One round per run: the loop's budget (remaining time less its margin) is shorter than two intervals. */
const context = { functionName: 'probe', getRemainingTimeInMillis: () => 4_000 } as unknown as Context;

interface Setup {
  readonly table: string;
  readonly log: AuditLog;
  readonly anchorsDir: string;
  /** HSM signatures the checkpointer asked for. */
  readonly signatures: () => number;
  readonly run: () => Promise<{ failed: boolean; figures: Record<string, unknown> }>;
}

/** A table with entries on both chains and an anchored checkpoint over them; a handler over it. */
async function checkpointed(): Promise<Setup> {
  const table = (await createTestTables(['audit'])).audit;
  const anchorsDir = mkdtempSync(join(tmpdir(), 'anchors-'));
  let signatures = 0;
  const counting: AuditSigner = {
    ...audit,
    sign: (digest) => {
      signatures++;
      return audit.sign(digest);
    },
  };
  const repo = new AuditRepository(doc, { tableName: table });
  const anchors = fileAnchorStore(anchorsDir);
  for (let i = 0; i < 6; i++) {
    await new AuditLog(repo, { chains: CHAINS, chain: i % CHAINS, signer: audit }).appendMany(eventsFor(i));
  }
  const log = new AuditLog(repo, { chains: CHAINS, signer: counting, anchors, signHeads: false });
  await log.checkpoint();
  const before = signatures;
  const handler = createAuditCheckpointHandler({
    log: async () => log,
    intervalMs: 1_000,
    logger: new Logger({ serviceName: 'probe', logLevel: 'CRITICAL' }),
    metrics: new Metrics({ namespace: 'ProbeTest' }),
  });
  return {
    table,
    log,
    anchorsDir,
    signatures: () => signatures - before,
    run: async () => {
      let failed = false;
      const lines = await stdoutOf(() => handler({}, context).catch(() => (failed = true)));
      const figures = lines.filter((l) => '_aws' in l && !('ColdStart' in l));
      expect(figures).toHaveLength(1);
      return { failed, figures: figures[0] };
    },
  };
}

/** What the attacker reads: an entry item as stored. */
async function entryItem(table: string, chain: number, sequence: number): Promise<Record<string, unknown>> {
  const key = { pk: auditEntryPk(chain), sk: auditSequenceSk(sequence) };
  return (await doc.send(new GetCommand({ TableName: table, Key: key, ConsistentRead: true }))).Item!;
}

const checkpointHead = async (table: string): Promise<number> =>
  Number(
    (
      await doc.send(
        new GetCommand({
          TableName: table,
          Key: { pk: 'CHECKPOINT#HEAD', sk: 'HEAD' },
          ConsistentRead: true,
        }),
      )
    ).Item!.sequence,
  );

describe('the checkpointer refuses heads that moved backwards', () => {
  it('signs over heads that only moved forward, with AuditHeadsRewound 0', async () => {
    const s = await checkpointed();
    await new AuditLog(new AuditRepository(doc, { tableName: s.table }), {
      chains: CHAINS,
      chain: 1,
    }).appendMany(eventsFor(100));
    const { failed, figures } = await s.run();
    expect(failed).toBe(false);
    expect(figures).toMatchObject({ AuditCheckpoints: 1, AuditHeadsRewound: 0 });
    expect(s.signatures()).toBe(1);
    expect(await checkpointHead(s.table)).toBe(2);
    expect(readdirSync(join(s.anchorsDir, 'checkpoints'))).toHaveLength(2);
  });

  it('a head set back to an earlier entry: no signature, the alarm metric, nothing stored or anchored', async () => {
    const s = await checkpointed();
    // Chain 0 holds entries 1..3; the attacker points its head back at entry 2.
    const two = await entryItem(s.table, 0, 2);
    await doc.send(
      new PutCommand({
        TableName: s.table,
        Item: { pk: auditHeadPk(0), sk: 'HEAD', sequence: 2, hash: two.hash },
      }),
    );
    const { failed, figures } = await s.run();
    expect(failed).toBe(true);
    expect(figures).toMatchObject({ AuditCheckpoints: 0, AuditHeadsRewound: 1 });
    expect(s.signatures()).toBe(0);
    expect(await checkpointHead(s.table)).toBe(1);
    expect(readdirSync(join(s.anchorsDir, 'checkpoints'))).toHaveLength(1);
  });

  it('the recorded head entry rewritten in place (PutItem, consistent hash and head): refused', async () => {
    const s = await checkpointed();
    const two = await entryItem(s.table, 1, 2);
    const forged = buildEntry(
      { chain: 1, sequence: 2, hash: String(two.hash) },
      [eventsFor(999)[0]],
      Date.now(),
    );
    await doc.send(
      new PutCommand({
        TableName: s.table,
        Item: { ...(await entryItem(s.table, 1, 3)), ...forged, pk: auditEntryPk(1), sk: auditSequenceSk(3) },
      }),
    );
    await doc.send(
      new PutCommand({
        TableName: s.table,
        Item: { pk: auditHeadPk(1), sk: 'HEAD', sequence: 3, hash: forged.hash },
      }),
    );
    const { failed, figures } = await s.run();
    expect(failed).toBe(true);
    expect(figures).toMatchObject({ AuditHeadsRewound: 1 });
    expect(s.signatures()).toBe(0);
    expect(await checkpointHead(s.table)).toBe(1);
  });

  it('rewound and written forward past the recorded head: refused', async () => {
    const s = await checkpointed();
    // The attacker's own appender, from entry 2 of chain 0, writes two entries over 3 and beyond.
    const two = await entryItem(s.table, 0, 2);
    let head = { chain: 0, sequence: 2, hash: String(two.hash) };
    for (const i of [500, 501]) {
      const entry = buildEntry(head, eventsFor(i), Date.now());
      await doc.send(
        new PutCommand({
          TableName: s.table,
          Item: { ...entry, pk: auditEntryPk(0), sk: auditSequenceSk(entry.sequence) },
        }),
      );
      head = { chain: 0, sequence: entry.sequence, hash: entry.hash };
    }
    await doc.send(new PutCommand({ TableName: s.table, Item: { pk: auditHeadPk(0), sk: 'HEAD', ...head } }));
    expect(head.sequence).toBe(4);
    const { failed, figures } = await s.run();
    expect(failed).toBe(true);
    expect(figures).toMatchObject({ AuditHeadsRewound: 1 });
    expect(s.signatures()).toBe(0);
    expect(await checkpointHead(s.table)).toBe(1);
  });
});
