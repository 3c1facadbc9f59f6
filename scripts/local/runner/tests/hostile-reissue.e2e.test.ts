/**
 * A second certificate for one approval, against the running local pipeline, by someone who can write
 * every table (the threat model) and holds a login the citizen gave for one request: once the request is
 * signed, the attacker deletes the request's record, the API's replay item for the ID token and the CA's
 * `REQ#` and `ASSERTION#` registers, and submits the same body with the same ID token again. The pipeline
 * signs it with a new key and a second certificate; the audit log keeps both `certificate.issued` events,
 * and `npm run audit -- verify` names the request id and the assertion hash certified twice (exit 1).
 */
import { randomBytes } from 'node:crypto';
import { DeleteCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { AuditEvent, CertificateIssuedEvent } from '@pipeline/core/audit';
import { TABLES, tableName } from '@pipeline/resources';
import { obtainIdToken } from '../../../client/src/oidc-login';
import {
  SigningClient,
  signRequestNonce,
  type SignBinding,
  type SignRequestResult,
} from '../../../client/src/signing-client';
import { localIssuer } from '../../client';
import { readAudit } from '../../faults/harness';
import { TEST_CITIZENS } from '../../idp/citizens';
import { CLIENT_IDS } from '../../idp/clients';
import { auditCli, startHostilePipeline, type HostilePipeline } from './support/hostile-pipeline';

jest.setTimeout(180_000);

let hostile: HostilePipeline | undefined;

beforeAll(async () => {
  hostile = await startHostilePipeline('hostile-reissue', {
    POOL_TARGETS: 'EC-P256=6',
    AUDIT_CHECKPOINT_INTERVAL_SECONDS: '1',
  });
}, 120_000);

afterAll(() => hostile?.stop());

/** Deletes every item of `table` whose `field` is `value` (a scan: the attacker reads the whole table). */
async function deleteWhere(
  table: string,
  keyOf: (item: Record<string, unknown>) => Record<string, unknown>,
  match: (item: Record<string, unknown>) => boolean,
): Promise<number> {
  const { doc } = hostile!;
  const items = (await doc.send(new ScanCommand({ TableName: table, ConsistentRead: true }))).Items ?? [];
  const victims = items.filter(match);
  for (const item of victims) await doc.send(new DeleteCommand({ TableName: table, Key: keyOf(item) }));
  return victims.length;
}

test('the same login resubmitted after its request and the registers were deleted: verify names the request and the assertion certified twice', async () => {
  const { pipeline } = hostile!;
  const client = new SigningClient({ apiUrl: pipeline.url, apiKey: pipeline.apiKey });
  const binding: SignBinding = {
    requestId: SigningClient.newRequestId(),
    digestAlgorithm: 'SHA-256',
    digest: randomBytes(32).toString('base64'),
    keyType: 'EC-P256',
    signatureAlgorithm: 'ECDSA',
    format: 'raw',
  };
  const id = binding.requestId;
  const { idToken } = await obtainIdToken({
    issuer: localIssuer(),
    clientId: CLIENT_IDS.signingService,
    personalIdentityNumber: TEST_CITIZENS[4].personalIdentityNumber,
    nonce: signRequestNonce(binding),
  });
  const body = { ...binding, identityAssertion: idToken };
  const first: SignRequestResult = await client.submitAndWait(body, 60);
  expect(first.status).toBe('signed');
  const clean = auditCli(pipeline, 'verify');
  expect(clean.stdout).toMatch(/^certificates: \d+ issued; each request, assertion and key certified once$/m);

  // Resent as it is, the API answers the same request: nothing new.
  expect((await client.submitAndWait(body, 30)).certificateSerial).toBe(first.certificateSerial);

  // The attacker clears what stands in the way of a second issuance.
  const requests = tableName(TABLES.requests);
  const certificates = tableName(TABLES.certificates);
  const assertions = tableName(TABLES.assertions);
  expect(
    await deleteWhere(
      requests,
      (i) => ({ id: i.id }),
      (i) => i.id === id,
    ),
  ).toBe(1);
  expect(
    await deleteWhere(
      assertions,
      (i) => ({ pk: i.pk }),
      (i) => i.requestId === id,
    ),
  ).toBe(1);
  expect(
    await deleteWhere(
      certificates,
      (i) => ({ pk: i.pk }),
      (i) => i.pk === `REQ#${id}` || (String(i.pk).startsWith('ASSERTION#') && i.requestId === id),
    ),
  ).toBe(2);

  const second = await client.submitAndWait(body, 60);
  expect(second.status).toBe('signed');
  expect(second.certificateSerial).not.toBe(first.certificateSerial);

  // The log holds both issuances, for one assertion.
  const { events } = await readAudit(hostile!.doc);
  const issued = events.filter(
    (e: AuditEvent): e is CertificateIssuedEvent => e.type === 'certificate.issued' && e.requestId === id,
  );
  expect(issued.map((e) => e.serial).sort()).toEqual(
    [first.certificateSerial, second.certificateSerial].sort(),
  );
  const [assertionHash] = new Set(issued.map((e) => e.assertionHash));
  expect(issued.every((e) => e.assertionHash === assertionHash)).toBe(true);

  const tampered = auditCli(pipeline, 'verify');
  expect(tampered.status).toBe(1);
  const serials = [first, second].map((r) => `${r.certificateSerial} (request ${id})`);
  const named = tampered.stdout.split('\n').filter((l) => l.startsWith('  CERTIFIED '));
  expect(named.map((l) => l.replace(/serials .*/, 'serials'))).toEqual([
    `  CERTIFIED 2 TIMES: request ${id}: serials`,
    `  CERTIFIED 2 TIMES: assertion ${assertionHash}: serials`,
  ]);
  for (const line of named) for (const s of serials) expect(line).toContain(s);
  expect(tampered.stdout).not.toContain('certified once');
});
