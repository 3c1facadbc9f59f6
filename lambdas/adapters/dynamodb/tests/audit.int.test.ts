/**
 * Integration tests of the audit log against DynamoDB Local and the SoftHSM audit key: concurrent
 * appenders (many tasks, two AuditLog instances with their own clients) keep every chain intact;
 * checkpoints are ECDSA P-384 signatures that Node's crypto verifies with the audit public key; direct
 * edits, deletions and reorderings of items are named by `verify` and make the CLI exit non-zero.
 */
import { execFile } from 'node:child_process';
import { createHash, verify } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { documentClient } from '@pipeline/adapters/aws';
import { connectHsm, type Pkcs11Hsm } from '@pipeline/adapters/hsm';
import { loadAuditConfig, loadConfig } from '@pipeline/config';
import {
  auditEntryPk,
  auditPublicKey,
  auditSequenceSk,
  canonicalJson,
  receiptCovers,
  type AuditSigner,
} from '@pipeline/core/audit';
import { AuditLog, hsmAuditSigner, verifyAuditStore } from '@pipeline/audit';
import { eventsFor } from '../../../audit/tests/helpers';
import { createTestTables } from '../../../../scripts/local/resources';
import { AuditRepository } from '../src/audit-repository';

const ROOT = join(__dirname, '../../../..');
const PEM = join(ROOT, '.local/audit/audit-key.pem');
const config = loadConfig(process.env);
const audit = loadAuditConfig(process.env);
const CHAINS = 4;
let doc: DynamoDBDocumentClient;
let hsm: Pkcs11Hsm;
let signer: AuditSigner;
/** The rest of a deployment the CLI's verify reads: a certificate table, an (empty) PKI publication. */
let deployment: Record<string, string>;
const anchorsRoot = mkdtempSync(join(tmpdir(), 'audit-anchors-'));

beforeAll(async () => {
  doc = documentClient(config.aws);
  hsm = await connectHsm(config.hsm);
  signer = await hsmAuditSigner(hsm, audit.keyLabel);
  deployment = {
    CERTIFICATES_TABLE_NAME: (await createTestTables(['certificates'])).certificates,
    PKI_PUBLISH_TARGET: `file:${mkdtempSync(join(tmpdir(), 'pki-'))}`,
  };
});

afterAll(async () => {
  doc?.destroy();
  await hsm?.close();
});

/**
 * A fresh table with `requests` entries (each a request's 4 events), written round robin by one writer per
 * chain, and a checkpoint in the middle.
 */
async function logWith(requests: number): Promise<{ table: string; repo: AuditRepository }> {
  const table = (await createTestTables(['audit'])).audit;
  const repo = new AuditRepository(doc, { tableName: table });
  const logs = Array.from(
    { length: CHAINS },
    (_, chain) => new AuditLog(repo, { chains: CHAINS, chain, signer }),
  );
  for (let i = 0; i < requests; i++) {
    await logs[i % CHAINS].appendMany(eventsFor(i));
    if (i === Math.floor(requests / 2)) await logs[0].checkpoint();
  }
  return { table, repo };
}

const run = promisify(execFile);

/** Runs the CLI as a child process against a table; resolves with its exit code and output. */
async function cli(table: string, ...args: string[]): Promise<{ code: number; stdout: string }> {
  try {
    const { stdout } = await run(
      join(ROOT, 'node_modules/.bin/tsx'),
      [join(ROOT, 'scripts/audit.ts'), ...args],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          ...deployment,
          AUDIT_TABLE_NAME: table,
          AUDIT_CHAINS: String(CHAINS),
          AUDIT_ANCHOR_TARGET: `file:${join(anchorsRoot, table)}`,
        },
        timeout: 60_000,
      },
    );
    return { code: 0, stdout };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '' };
  }
}

const key = (chain: number, seq: number): Record<string, string> => ({
  pk: auditEntryPk(chain),
  sk: auditSequenceSk(seq),
});

describe('audit log on DynamoDB Local', () => {
  it('keeps every chain intact under concurrent appends from two instances', async () => {
    const table = (await createTestTables(['audit'])).audit;
    const other = documentClient(config.aws);
    try {
      const a = new AuditLog(new AuditRepository(doc, { tableName: table }), { chains: CHAINS });
      const b = new AuditLog(new AuditRepository(other, { tableName: table }), { chains: CHAINS });
      const receipts = await Promise.all(
        Array.from({ length: 120 }, (_, i) => (i % 2 ? a : b).appendMany(eventsFor(i))),
      );
      const report = await verifyAuditStore(
        new AuditRepository(doc, { tableName: table }),
        CHAINS,
        undefined,
      );
      expect(report.issues).toEqual([]);
      // Appends queued behind a write share an entry: far fewer entries than events.
      expect(report.entries).toBeLessThan(120);
      // Every receipt names a distinct leaf, and proves its own event.
      const slots = new Set(receipts.flat().map((r) => `${r.chain}/${r.sequence}/${r.leafIndex}`));
      expect(slots.size).toBe(480);
      const stored = await new AuditRepository(doc, { tableName: table }).readAll();
      receipts.forEach((rs, i) =>
        rs.forEach((r, j) => {
          const entry = stored.entries.get(r.chain)!.find((e) => e.sequence === r.sequence)!;
          expect(receiptCovers(r, canonicalJson(eventsFor(i)[j] as never), entry as never)).toBe(true);
        }),
      );
    } finally {
      other.destroy();
    }
  });

  it('signs checkpoints in the HSM; Node crypto verifies them with the audit public key', async () => {
    const { table, repo } = await logWith(6);
    const cp = await new AuditLog(repo, { chains: CHAINS, signer }).checkpoint();
    const item = (
      await doc.send(
        new GetCommand({
          TableName: table,
          Key: { pk: 'CHECKPOINT', sk: auditSequenceSk(cp.body.sequence) },
        }),
      )
    ).Item!;
    const body = Buffer.from(item.body as string, 'utf8');
    const signature = Buffer.from(item.signature as Uint8Array);
    const fromFile = auditPublicKey(readFileSync(PEM, 'utf8'));
    const fromHsm = auditPublicKey((await hsm.findPublicKeySpki(audit.keyLabel))!);
    expect(verify('sha384', body, fromFile, signature)).toBe(true);
    expect(verify('sha384', body, fromHsm, signature)).toBe(true);
    expect(fromFile.asymmetricKeyDetails?.namedCurve).toBe('secp384r1');
    const tampered = Buffer.from(body);
    tampered[tampered.length - 3] ^= 1;
    expect(verify('sha384', tampered, fromFile, signature)).toBe(false);
    expect(cp.body.heads.reduce((n, h) => n + h.sequence, 0)).toBe(6);
    expect(item.hash).toBe(createHash('sha256').update(body).digest('hex'));
    // The audit key never leaves the HSM.
    const attrs = await hsm.keyAttributes((await hsm.findPrivateKey(audit.keyLabel, 'EC-P384'))!);
    expect(attrs).toMatchObject({ token: true, sensitive: true, extractable: false });
  });

  it('the CLI says intact on an untouched log and exits 0, and writes a checkpoint on demand', async () => {
    const { table } = await logWith(24);
    const out = await cli(table, 'verify');
    expect(out.stdout).toMatch(/^intact: 24 entries in 4 chains, 1 checkpoints/m);
    expect(out.code).toBe(0);
    const cp = await cli(table, 'checkpoint');
    expect(cp.stdout).toMatch(/^checkpoint 2 signed by .*, anchored in /m);
    expect(cp.code).toBe(0);
    // The CLI's checkpoint also anchored the one written before without an anchor store.
    const after = await cli(table, 'verify');
    expect(after.stdout).toMatch(
      /^intact: 24 entries in 4 chains, 2 checkpoints .*, 2 anchored \(last: 2\)$/m,
    );
    expect(after.stdout).toMatch(/^revocations: 0 in the records, no published CRL, all agree$/m);
  });

  it('names an edited entry and the CLI exits non-zero', async () => {
    const { table, repo } = await logWith(24);
    await doc.send(
      new UpdateCommand({
        TableName: table,
        Key: key(2, 2),
        UpdateExpression: 'SET #e[0] = :e',
        ExpressionAttributeNames: { '#e': 'events' },
        ExpressionAttributeValues: { ':e': '{"keyId":"key-999","type":"pool.key-claimed"}' },
      }),
    );
    const report = await verifyAuditStore(repo, CHAINS, auditPublicKey(readFileSync(PEM, 'utf8')));
    expect(report.issues).toContainEqual(
      expect.objectContaining({ kind: 'modified', chain: 2, sequence: 2 }),
    );
    const out = await cli(table, 'verify');
    expect(out.code).toBe(1);
    expect(out.stdout).toMatch(/chain 2 sequence 2: modified/);
    const json = await cli(table, 'verify', '--json');
    expect(JSON.parse(json.stdout)).toMatchObject({ intact: false });
  });

  it('names a deleted entry and reordered entries', async () => {
    const { table, repo } = await logWith(24);
    await doc.send(new DeleteCommand({ TableName: table, Key: key(1, 3) }));
    const four = (await doc.send(new GetCommand({ TableName: table, Key: key(3, 4) }))).Item!;
    const five = (await doc.send(new GetCommand({ TableName: table, Key: key(3, 5) }))).Item!;
    await doc.send(new PutCommand({ TableName: table, Item: { ...five, sk: auditSequenceSk(4) } }));
    await doc.send(new PutCommand({ TableName: table, Item: { ...four, sk: auditSequenceSk(5) } }));
    const report = await verifyAuditStore(repo, CHAINS, auditPublicKey(readFileSync(PEM, 'utf8')));
    expect(report.issues).toContainEqual(expect.objectContaining({ kind: 'deleted', chain: 1, sequence: 3 }));
    expect(report.issues).toContainEqual(
      expect.objectContaining({ kind: 'reordered', chain: 3, sequence: 4 }),
    );
    expect(report.issues).toContainEqual(
      expect.objectContaining({ kind: 'reordered', chain: 3, sequence: 5 }),
    );
    const out = await cli(table, 'verify');
    expect(out.code).toBe(1);
    expect(out.stdout).toMatch(/chain 1 sequence 3: deleted/);
    expect(out.stdout).toMatch(/chain 3 sequence 4: reordered/);
  });

  it('measures append latency (one event, and one request of 3 events) against DynamoDB Local', async () => {
    const table = (await createTestTables(['audit'])).audit;
    const log = new AuditLog(new AuditRepository(doc, { tableName: table }), { chains: 8 });
    const time = async (n: number, f: (i: number) => Promise<unknown>): Promise<number[]> => {
      const ms: number[] = [];
      for (let i = 0; i < n; i++) {
        const t = process.hrtime.bigint();
        await f(i);
        ms.push(Number(process.hrtime.bigint() - t) / 1e6);
      }
      return ms.sort((x, y) => x - y);
    };
    const pct = (ms: number[], p: number): string =>
      ms[Math.min(ms.length - 1, Math.floor(ms.length * p))].toFixed(1);
    await time(20, (i) => log.append(eventsFor(10_000 + i)[0])); // warm-up
    const one = await time(200, (i) => log.append(eventsFor(i)[0]));
    const three = await time(200, (i) => log.appendMany(eventsFor(1000 + i).slice(0, 3)));
    const t = Date.now();
    await Promise.all(Array.from({ length: 100 }, (_, i) => log.appendMany(eventsFor(2000 + i).slice(0, 3))));
    const concurrentMs = Date.now() - t;
    console.log(
      `audit append latency (DynamoDB Local): 1 event p50 ${pct(one, 0.5)} ms p95 ${pct(one, 0.95)} ms; ` +
        `3 events p50 ${pct(three, 0.5)} ms p95 ${pct(three, 0.95)} ms; ` +
        `100 concurrent 3-event appends in ${concurrentMs} ms`,
    );
    expect(Number(pct(one, 0.5))).toBeLessThan(100);
    expect(
      (await verifyAuditStore(new AuditRepository(doc, { tableName: table }), 8, undefined)).intact,
    ).toBe(true);
  });
});
