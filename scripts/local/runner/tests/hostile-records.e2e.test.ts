/**
 * Attacks on the state relying parties depend on, against the running local pipeline, by someone who can
 * write every table (a leaked role, a restored backup, a bug in another function):
 *
 * - the newest audit entries of a chain are deleted and its head rewound: `npm run audit -- verify`
 *   names the truncation and its position from the anchors outside the table, and `prove` of a request
 *   whose receipt was in the cut entries says the log no longer holds what the audit key signed;
 * - a revocation is removed from its certificate record: OCSP still says revoked (openssl), the next CRL
 *   still lists the serial, the publication audits the restored entry, and `verify` names the record.
 */
import { X509Certificate } from 'node:crypto';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { AuditRepository } from '../../../../lambdas/adapters/dynamodb/src/audit-repository';
import { auditEntryPk, auditHeadPk, auditSequenceSk, eventsOf } from '@pipeline/core/audit';
import { TABLES, tableName } from '@pipeline/resources';
import { call, signSample, type SignRequestView } from '../../client';
import type { LocalPipeline } from '../pipeline';
import {
  anchoredOver,
  auditCli,
  startHostilePipeline,
  type HostilePipeline,
} from './support/hostile-pipeline';
import { crlListing, ocspPost } from './support/relying-party';

jest.setTimeout(180_000);

let hostile: HostilePipeline | undefined;
let pipeline: LocalPipeline;
let pki: string;
let doc: HostilePipeline['doc'];

beforeAll(async () => {
  hostile = await startHostilePipeline('hostile-rec', {
    POOL_TARGETS: 'EC-P256=10',
    AUDIT_CHECKPOINT_INTERVAL_SECONDS: '1',
  });
  ({ pipeline, pki, doc } = hostile);
}, 120_000);

afterAll(() => hostile?.stop());

const signOne = (index: number): Promise<SignRequestView> => signSample(pipeline.url, pipeline.apiKey, index);

test('a chain cut short and its head rewound: verify names the truncation from the anchors, prove the lost receipt', async () => {
  const views: SignRequestView[] = [];
  for (let i = 0; i < 3; i++) views.push(await signOne(i));
  const victim = views[views.length - 1];
  const receipt = victim.receipt!;
  expect(receipt.head?.algorithm).toBe('ECDSA-P384-SHA384');
  const anchored = await anchoredOver(pipeline, receipt);
  const clean = auditCli(pipeline, 'verify');
  expect(clean.stdout).toMatch(/^intact: /m);
  expect(clean.status).toBe(0);
  expect(auditCli(pipeline, 'prove', victim.id).stdout).toMatch(
    /entry linked to the head recorded by signed anchored checkpoint \d+/,
  );

  // The attacker deletes the victim's entry and every later one of its chain, and moves the head back to
  // the entry before: the table alone is consistent again.
  const audit = tableName(TABLES.audit);
  const head = (
    await doc.send(new GetCommand({ TableName: audit, Key: { pk: auditHeadPk(receipt.chain), sk: 'HEAD' } }))
  ).Item!;
  for (let s = receipt.sequence; s <= Number(head.sequence); s++) {
    await doc.send(
      new DeleteCommand({
        TableName: audit,
        Key: { pk: auditEntryPk(receipt.chain), sk: auditSequenceSk(s) },
      }),
    );
  }
  if (receipt.sequence === 1) {
    await doc.send(
      new DeleteCommand({ TableName: audit, Key: { pk: auditHeadPk(receipt.chain), sk: 'HEAD' } }),
    );
  } else {
    const before = (
      await doc.send(
        new GetCommand({
          TableName: audit,
          Key: { pk: auditEntryPk(receipt.chain), sk: auditSequenceSk(receipt.sequence - 1) },
        }),
      )
    ).Item!;
    await doc.send(
      new PutCommand({
        TableName: audit,
        Item: { pk: auditHeadPk(receipt.chain), sk: 'HEAD', sequence: before.sequence, hash: before.hash },
      }),
    );
  }

  const tampered = auditCli(pipeline, 'verify');
  expect(tampered.status).toBe(1);
  expect(tampered.stdout).toMatch(
    new RegExp(
      `chain ${receipt.chain} sequence \\d+: truncated: truncated: anchored checkpoint ${anchored} recorded the chain up to here, it now ends at ${receipt.sequence - 1}`,
    ),
  );
  const lost = auditCli(pipeline, 'prove', victim.id);
  expect(lost.status).toBe(1);
  expect(lost.stdout).toContain(
    `the log no longer holds entry ${receipt.chain}/${receipt.sequence}, which the audit key signed`,
  );
});

test('a revocation removed from its record: OCSP and the next CRL keep it, the publication audits it, verify names it', async () => {
  const [first, second] = [await signOne(10), await signOne(11)];
  const serial = new X509Certificate(first.certificate!).serialNumber;
  const revoke = (view: SignRequestView) =>
    call(`${pipeline.url}/sign-requests/${view.id}/revocation`, {
      apiKey: pipeline.apiKey,
      body: { reason: 'keyCompromise' },
    });
  expect((await revoke(first)).status).toBe(200);
  await crlListing(pki, [serial]);

  // The attacker takes the revocation off the certificate record.
  await doc.send(
    new UpdateCommand({
      TableName: tableName(TABLES.certificates),
      Key: { pk: `SERIAL#${serial.toLowerCase()}` },
      UpdateExpression: 'REMOVE revokedAt, revocationReason, revokedBy, revokedList',
    }),
  );

  // OCSP answers from the published (HSM-signed) CRL, whatever the row says; openssl checks the answer.
  const answer = await ocspPost(pki, first.certificate!);
  expect(answer.stderr).toContain('Response verify OK');
  expect(answer.stdout).toMatch(/leaf\.pem: revoked/);
  expect(answer.stdout).toMatch(/Reason: keyCompromise/);

  // The next publication (after another revocation) keeps the serial, and says so in the audit log.
  expect((await revoke(second)).status).toBe(200);
  const secondSerial = new X509Certificate(second.certificate!).serialNumber;
  await crlListing(pki, [secondSerial, serial]);
  const events = eventsOf(await new AuditRepository(doc, { tableName: tableName(TABLES.audit) }).readAll());
  expect(events).toContainEqual({ type: 'revocation.restored', serial: serial.toLowerCase() });

  const report = auditCli(pipeline, 'verify');
  expect(report.status).toBe(1);
  expect(report.stdout).toMatch(
    new RegExp(
      `serial ${serial.toLowerCase()}: record-lost: the audit log and the published CRL say revoked; the certificate record shows no revocation`,
    ),
  );
  expect(report.stdout).not.toMatch(new RegExp(`serial ${secondSerial.toLowerCase()}:`));
});
