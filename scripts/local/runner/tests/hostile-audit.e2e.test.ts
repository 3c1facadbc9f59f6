/**
 * Attacks on the audit log itself, against the running local pipeline, by someone who can write the audit
 * table (any function's role may put items there) and call the anchor store:
 *
 * - an entry overwritten in place with PutItem, re-hashed with the rest of its chain and the head moved
 *   to the result, so that the table alone is consistent: the checkpointer signs no checkpoint over the
 *   rewritten chain (its heads moved backwards from the last checkpoint), and `npm run audit -- verify`
 *   names the chain and position from the anchors;
 * - the pipeline's own writes never replace an item: a second write of an existing entry key fails and
 *   leaves the entry and the head as they were;
 * - an anchored checkpoint cannot be replaced through the anchor store: a different checkpoint under the
 *   same sequence is refused and the anchor stays as written.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { AuditRepository } from '../../../../lambdas/adapters/dynamodb/src/audit-repository';
import {
  AUDIT_CHECKPOINT_PK,
  auditEntryPk,
  auditHeadPk,
  auditSequenceSk,
  buildEntry,
  parseCheckpointBody,
  type AuditEvent,
  type ChainHead,
} from '@pipeline/core/audit';
import { TABLES, tableName } from '@pipeline/resources';
import { signSample, type SignRequestView } from '../../client';
import type { LocalPipeline } from '../pipeline';
import {
  anchorStore,
  anchoredOver,
  auditCli,
  startHostilePipeline,
  type HostilePipeline,
} from './support/hostile-pipeline';

jest.setTimeout(180_000);

let hostile: HostilePipeline | undefined;
let pipeline: LocalPipeline;
let doc: HostilePipeline['doc'];
let audit: string;

beforeAll(async () => {
  hostile = await startHostilePipeline('hostile-audit', {
    POOL_TARGETS: 'EC-P256=10',
    AUDIT_CHECKPOINT_INTERVAL_SECONDS: '1',
  });
  ({ pipeline, doc } = hostile);
  audit = tableName(TABLES.audit);
}, 120_000);

afterAll(() => hostile?.stop());

const signOne = (index: number): Promise<SignRequestView> => signSample(pipeline.url, pipeline.apiKey, index);

const entryKey = (chain: number, sequence: number): Record<string, string> => ({
  pk: auditEntryPk(chain),
  sk: auditSequenceSk(sequence),
});

async function item(key: Record<string, string>): Promise<Record<string, unknown>> {
  return (await doc.send(new GetCommand({ TableName: audit, Key: key, ConsistentRead: true }))).Item!;
}

/** Every checkpoint body in the table, parsed. */
async function checkpointBodies(): Promise<NonNullable<ReturnType<typeof parseCheckpointBody>>[]> {
  const { Items } = await doc.send(
    new QueryCommand({
      TableName: audit,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': AUDIT_CHECKPOINT_PK },
      ConsistentRead: true,
    }),
  );
  return (Items ?? []).map((i) => parseCheckpointBody(String(i.body))!);
}

test('an entry overwritten in place and its chain re-hashed: no checkpoint is signed over it, verify names it', async () => {
  const victim = await signOne(0);
  const receipt = victim.receipt!;
  const anchored = await anchoredOver(pipeline, receipt);
  expect(auditCli(pipeline, 'verify').status).toBe(0);

  // The attacker rewrites the victim's entry with PutItem (its signature.made now names another
  // signature), then every later entry of the chain re-hashed onto it, and moves the head to the result.
  const { chain, sequence } = receipt;
  const headItem = await item({ pk: auditHeadPk(chain), sk: 'HEAD' });
  const original = await item(entryKey(chain, sequence));
  let head: ChainHead = { chain, sequence: sequence - 1, hash: String(original.prevHash) };
  for (let s = sequence; s <= Number(headItem.sequence); s++) {
    const stored = await item(entryKey(chain, s));
    const events = (stored.events as string[]).map((text) => {
      const event = JSON.parse(text) as AuditEvent & { requestId?: string };
      return event.type === 'signature.made' && event.requestId === victim.id
        ? { ...event, signatureHash: 'f'.repeat(64) }
        : event;
    });
    const forged = buildEntry(head, events, Number(stored.timestamp));
    await doc.send(new PutCommand({ TableName: audit, Item: { ...entryKey(chain, s), ...forged } }));
    head = { chain, sequence: forged.sequence, hash: forged.hash };
  }
  await doc.send(
    new PutCommand({
      TableName: audit,
      Item: { pk: auditHeadPk(chain), sk: 'HEAD', sequence: head.sequence, hash: head.hash },
    }),
  );
  const rewritten = String((await item(entryKey(chain, sequence))).hash);
  expect(rewritten).not.toBe(original.hash);

  // Several checkpointer rounds later, no checkpoint records the rewritten chain: the checkpointer
  // refused the heads (moved backwards from its last checkpoint), whatever else moved meanwhile.
  await signOne(1);
  await new Promise((r) => setTimeout(r, 4_000));
  for (const body of await checkpointBodies()) {
    expect(body.heads.find((h) => h.chain === chain)?.hash).not.toBe(head.hash);
  }

  const report = auditCli(pipeline, 'verify');
  expect(report.status).toBe(1);
  expect(report.stdout).toMatch(
    new RegExp(`chain ${chain} sequence ${head.sequence}: rewound: .*anchored checkpoint ${anchored}`),
  );
});

test("the pipeline's writes never overwrite: a second write of an existing entry key fails and changes nothing", async () => {
  const view = await signOne(2);
  const { chain, sequence } = view.receipt!;
  const repo = new AuditRepository(doc, { tableName: audit });
  const before = await item(entryKey(chain, sequence));
  const current = await repo.readHead(chain);
  // The appender's own write path, with the chain head it would expect, for an entry key that exists.
  const again = {
    ...buildEntry(
      { chain, sequence: sequence - 1, hash: String(before.prevHash) },
      [{ type: 'pool.key-claimed', keyId: 'key-overwrite', requestId: 'req-overwrite' }],
      Date.now(),
    ),
  };
  expect(await repo.appendEntries(current, [again])).toBe(false);
  expect(await item(entryKey(chain, sequence))).toEqual(before);
  expect(await repo.readHead(chain)).toEqual(current);
});

test('an anchored checkpoint cannot be replaced through the anchor store: refused, the anchor unchanged', async () => {
  // The newest anchor (the checkpointer anchors nothing new once it has refused the rewritten chain).
  const anchors = anchorStore(pipeline);
  const sequence = (await anchors.readAll()).at(-1)!.position!;
  expect(sequence).toBeGreaterThan(0);
  const file = join(anchors.location, `${String(sequence).padStart(12, '0')}.json`);
  const written = readFileSync(file, 'utf8');
  const stored = JSON.parse(written) as { body: string; signature: string; hash: string };
  const other = {
    sequence,
    body: stored.body.replace(/"createdAt":\d+/, '"createdAt":1'),
    signature: Buffer.from(stored.signature, 'base64'),
    hash: 'e'.repeat(64),
  };
  expect(await anchors.put(other)).toBe(false);
  expect(readFileSync(file, 'utf8')).toBe(written);
  // Written read-only, as Object Lock keeps an object on AWS.
  expect(statSync(file).mode & 0o222).toBe(0);
  // The same checkpoint again is no overwrite: accepted, and still the same bytes.
  expect(await anchors.put({ ...stored, sequence, signature: Buffer.from(stored.signature, 'base64') })).toBe(
    true,
  );
  expect(readFileSync(file, 'utf8')).toBe(written);
});
