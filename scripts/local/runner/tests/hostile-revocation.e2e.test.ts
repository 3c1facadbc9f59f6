/**
 * Attacks on revocations against the running local pipeline, by a second API client (Mallory) who can
 * also write the requests table and the queue:
 *
 * - undo by takeover: right after the victim's e-service revoked its certificate, the request record is
 *   set back to `received` (its assertion put back) and its id queued, so that a new signer attempt asks
 *   the CA for a new certificate of the same request. The CA refuses (the first certificate was released
 *   to be signed with), the revocation stays in the records, OCSP says revoked and the next CRL lists it;
 *   the same reset of a signed, unrevoked request gets no second certificate either;
 * - revoking someone else's certificate: Mallory points her own signed record at the victim's serial and
 *   revokes her request, then rewrites the victim's record as hers and revokes it. The revocation function
 *   revokes only what the CA recorded for that request id and that client: her own certificate, then
 *   nothing; the victim's stays `good` (OCSP) and out of the next CRL.
 *
 * And a revocation is proven like a signature: its audit receipt, handed to the client, carries the audit
 * key's signature over its entry as the chain's head (openssl verifies it with the audit public key), made
 * by the revocation function's own HSM login, which holds a share of the audit key and no CA key.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { X509Certificate, randomBytes } from 'node:crypto';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { sqsClient } from '@pipeline/adapters/aws';
import { AuditRepository } from '../../../../lambdas/adapters/dynamodb/src/audit-repository';
import { loadAwsConfig } from '@pipeline/config';
import { auditPublicKey, eventsOf, proveReceipt, type AuditReceipt } from '@pipeline/core/audit';
import { TABLES, tableName } from '@pipeline/resources';
import { call, sampleRequest, type SampleRequest, type SignRequestView } from '../../client';
import { ROOT } from '../../paths';
import { runOpenssl } from '../../verify/openssl';
import type { LocalPipeline } from '../pipeline';
import { startHostilePipeline, type HostilePipeline } from './support/hostile-pipeline';
import { crlListing, crlText, fetchDer, ocspPost, until } from './support/relying-party';

jest.setTimeout(180_000);

const MALLORY = { clientId: 'mallory', apiKey: randomBytes(20).toString('base64url') };

let hostile: HostilePipeline | undefined;
let pipeline: LocalPipeline;
let pki: string;
let doc: HostilePipeline['doc'];
let victimKey: string;

beforeAll(async () => {
  hostile = await startHostilePipeline('hostile-rev', {
    POOL_TARGETS: 'EC-P256=16',
    LOCAL_API_CLIENTS: `${MALLORY.clientId}:${MALLORY.apiKey}`,
  });
  ({ pipeline, pki, doc } = hostile);
  victimKey = pipeline.apiKey;
  expect(pipeline.clients.map((c) => c.clientId)).toContain(MALLORY.clientId);
}, 120_000);

afterAll(() => hostile?.stop());

async function sign(
  apiKey: string,
  index: number,
): Promise<{ view: SignRequestView; request: SampleRequest }> {
  const request = await sampleRequest('EC-P256', index);
  const accepted = await call<{ id: string }>(`${pipeline.url}/sign-requests`, {
    apiKey,
    body: request.body,
  });
  expect(accepted.status).toBe(202);
  const view = await terminal(apiKey, accepted.body.id);
  expect(view.status).toBe('signed');
  return { view, request };
}

async function terminal(apiKey: string, id: string): Promise<SignRequestView> {
  return until(`request ${id} to end`, async () => {
    const res = await call<SignRequestView>(`${pipeline.url}/sign-requests/${id}?wait=10`, { apiKey });
    return ['signed', 'failed'].includes(res.body.status) ? res.body : undefined;
  });
}

function revoke(apiKey: string, id: string) {
  return call<{ certificateSerial?: string; receipt?: AuditReceipt; error?: { code: string } }>(
    `${pipeline.url}/sign-requests/${id}/revocation`,
    { apiKey, body: { reason: 'keyCompromise' } },
  );
}

/** Changes fields of a stored request record, as a table write would. */
async function tamper(id: string, set: Record<string, unknown>, remove: readonly string[] = []) {
  const names = Object.keys(set);
  await doc.send(
    new UpdateCommand({
      TableName: tableName(TABLES.requests),
      Key: { id },
      UpdateExpression:
        `SET ${names.map((_, i) => `#f${i} = :v${i}`).join(', ')}` +
        (remove.length > 0 ? ` REMOVE ${remove.join(', ')}` : ''),
      ExpressionAttributeNames: Object.fromEntries(names.map((n, i) => [`#f${i}`, n])),
      ExpressionAttributeValues: Object.fromEntries(names.map((n, i) => [`:v${i}`, set[n]])),
    }),
  );
}

async function enqueue(id: string): Promise<void> {
  const sqs = sqsClient(loadAwsConfig(process.env));
  try {
    await sqs.send(new SendMessageCommand({ QueueUrl: pipeline.queueUrl, MessageBody: id }));
  } finally {
    sqs.destroy();
  }
}

/** The signed record set back to `received` with its assertion, and its id queued: a new attempt starts. */
async function resetAndQueue(id: string, assertion: string): Promise<void> {
  await tamper(id, { status: 'received', identityAssertion: assertion }, [
    'attemptId',
    'leaseUntil',
    'signature',
    'certificate',
    'certificateSerial',
    'chain',
    'receipt',
    'finishedAt',
  ]);
  await enqueue(id);
}

/** The request record as stored, once it is terminal again (any client's). */
async function storedTerminal(id: string): Promise<Record<string, unknown>> {
  return until(
    `record ${id} terminal`,
    async () => {
      const item = (await doc.send(new GetCommand({ TableName: tableName(TABLES.requests), Key: { id } })))
        .Item;
      return item && ['signed', 'failed'].includes(String(item.status)) ? item : undefined;
    },
    60_000,
  );
}

async function certificatesItem(pk: string): Promise<Record<string, unknown> | undefined> {
  return (await doc.send(new GetCommand({ TableName: tableName(TABLES.certificates), Key: { pk } }))).Item;
}

const serialOf = (view: SignRequestView): string => new X509Certificate(view.certificate!).serialNumber;

async function auditEvents() {
  return eventsOf(await new AuditRepository(doc, { tableName: tableName(TABLES.audit) }).readAll());
}

async function issuedFor(requestId: string): Promise<string[]> {
  return (await auditEvents()).flatMap((e) =>
    e.type === 'certificate.issued' && e.requestId === requestId ? [e.serial] : [],
  );
}

/** The issuing CRL as published once a later revocation made the next one (it lists `later`). */
async function nextCrl(later: string): Promise<string> {
  return crlText(await crlListing(pki, [later]));
}

test('undo by takeover: a revoked certificate stays revoked, and one approval gets one certificate', async () => {
  const victim = await sign(victimKey, 1);
  const untouched = await sign(victimKey, 2);
  const serial = serialOf(victim.view);
  // The responder has read the published CRL (without the serial) just before the revocation.
  expect((await ocspPost(pki, victim.view.certificate!)).stdout).toMatch(/leaf\.pem: good/);

  expect((await revoke(victimKey, victim.view.id)).status).toBe(200);
  // Right after the revocation, the attacker resets both records and queues their ids.
  await resetAndQueue(victim.view.id, victim.request.body.identityAssertion);
  await resetAndQueue(untouched.view.id, untouched.request.body.identityAssertion);
  const [afterRevoked, afterSigned] = [
    await storedTerminal(victim.view.id),
    await storedTerminal(untouched.view.id),
  ];

  // No second certificate for either request: the CA refused before it signed one.
  expect(afterRevoked.status).toBe('failed');
  expect(afterRevoked.error).toMatchObject({ code: 'ALREADY_CERTIFIED' });
  expect(afterSigned.status).toBe('failed');
  expect(afterSigned.error).toMatchObject({ code: 'ALREADY_CERTIFIED' });
  expect(await issuedFor(victim.view.id)).toEqual([serial.toLowerCase()]);
  expect(await issuedFor(untouched.view.id)).toEqual([serialOf(untouched.view).toLowerCase()]);
  expect(await certificatesItem(`REQ#${victim.view.id}`)).toMatchObject({ serialHex: serial.toLowerCase() });
  // The refusals are in the audit log.
  const refused = (await auditEvents()).flatMap((e) =>
    e.type === 'certificate.refused' && e.code === 'ALREADY_CERTIFIED' ? [e.requestId] : [],
  );
  expect(refused).toEqual(expect.arrayContaining([victim.view.id, untouched.view.id]));

  // The revocation is still in the record; OCSP (openssl) says revoked at once, from the records.
  expect(await certificatesItem(`SERIAL#${serial.toLowerCase()}`)).toMatchObject({
    revocationReason: 'keyCompromise',
  });
  const answer = await ocspPost(pki, victim.view.certificate!);
  expect(answer.stderr).toContain('Response verify OK');
  expect(answer.stdout).toMatch(/leaf\.pem: revoked/);

  // And the next CRL lists it.
  const later = await sign(victimKey, 3);
  expect((await revoke(victimKey, later.view.id)).status).toBe(200);
  expect(await nextCrl(serialOf(later.view))).toContain(`Serial Number: ${serial}`);
});

test("revoking someone else's certificate: the serial comes from the CA's record of that request and client", async () => {
  const victim = await sign(victimKey, 4);
  const mallory = await sign(MALLORY.apiKey, 5);
  const victimSerial = serialOf(victim.view);
  const ownSerial = serialOf(mallory.view);

  // Mallory points her own signed record at the victim's serial and revokes "her" certificate.
  await tamper(mallory.view.id, { certificateSerial: victimSerial.toLowerCase() });
  const own = await revoke(MALLORY.apiKey, mallory.view.id);
  expect(own.status).toBe(200);
  expect(own.body.certificateSerial).toBe(ownSerial.toLowerCase());

  // Then she rewrites the victim's record as hers and revokes it.
  await tamper(victim.view.id, { clientId: MALLORY.clientId });
  const theirs = await revoke(MALLORY.apiKey, victim.view.id);
  expect(theirs.status).toBe(404);
  expect(theirs.body.error?.code).toBe('NOT_FOUND');

  // The victim's certificate is good (openssl), not revoked in its record, and not in the next CRL,
  // which lists Mallory's own.
  const crl = await nextCrl(ownSerial);
  expect(crl).not.toContain(`Serial Number: ${victimSerial}`);
  const item = await certificatesItem(`SERIAL#${victimSerial.toLowerCase()}`);
  expect(item?.revokedAt).toBeUndefined();
  const answer = await ocspPost(pki, victim.view.certificate!);
  expect(answer.stderr).toContain('Response verify OK');
  expect(answer.stdout).toMatch(/leaf\.pem: good/);
  // A CRL fetched now still does not list it.
  expect(crlText((await fetchDer(`${pki}/issuing.crl`))!)).not.toContain(`Serial Number: ${victimSerial}`);
});

test("a revocation's audit receipt carries a head signed by the audit key (the revocation function's own login)", async () => {
  const { view } = await sign(victimKey, 6);
  const revoked = await revoke(victimKey, view.id);
  expect(revoked.status).toBe(200);
  const receipt = revoked.body.receipt!;
  expect(receipt).toMatchObject({ chain: expect.any(Number), sequence: expect.any(Number) });
  expect(receipt.head).toMatchObject({ algorithm: 'ECDSA-P384-SHA384' });

  // What a client checks with openssl alone: the head statement (canonical JSON, keys sorted) and the
  // DER signature over its SHA-384, against the audit public key.
  const { chain, sequence, hash, head } = receipt;
  const statement =
    `{"algorithm":"${head!.algorithm}","chain":${chain},"hash":"${hash}","keyLabel":"${head!.keyLabel}",` +
    `"sequence":${sequence},"type":"audit-head","version":1}`;
  const pem = readFileSync(join(ROOT, '.local', 'audit', 'audit-key.pem'), 'utf8');
  const verify = (text: string) =>
    runOpenssl(['dgst', '-sha384', '-verify', 'audit.pem', '-signature', 'head.sig', 'statement.txt'], {
      'audit.pem': pem,
      'head.sig': Buffer.from(head!.signature, 'base64'),
      'statement.txt': text,
    });
  expect(verify(statement).stdout).toContain('Verified OK');
  // The signature is over this entry's head, not any other.
  expect(verify(statement.replace(`"sequence":${sequence}`, `"sequence":${sequence + 1}`)).ok).toBe(false);

  // And the receipt is the revocation's: the project's verifier finds the event it proves in the log.
  const log = await new AuditRepository(doc, { tableName: tableName(TABLES.audit) }).readAll();
  const proof = proveReceipt(receipt, log, auditPublicKey(pem));
  expect(proof.ok).toBe(true);
  expect(JSON.parse(proof.eventText!)).toMatchObject({
    type: 'certificate.revoked',
    serial: serialOf(view).toLowerCase(),
    requestId: view.id,
  });
});
