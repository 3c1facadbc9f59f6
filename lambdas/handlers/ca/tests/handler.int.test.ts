/**
 * The CA Lambda handler with its real set-up (configuration, HSM login, CA certificates from the
 * bootstrap, DynamoDB Local tables named through the environment, the identity providers trusted by the
 * environment: the local OpenID Provider the Jest set-up runs), fed the batches the signer sends.
 */
import { X509Certificate, createHash, randomUUID } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '@pipeline/adapters/aws';
import { connectHsm, type Pkcs11Hsm, type PrivateKeyRef } from '@pipeline/adapters/hsm';
import { loadConfig } from '@pipeline/config';
import { AuditRepository } from '../../../adapters/dynamodb/src/audit-repository';
import {
  assertionNonce,
  signMessageHash,
  type AssertionBinding,
  type SignMessage,
} from '@pipeline/core/identity';
import { eventsOf } from '@pipeline/core/audit';
import type { IssueItemResult } from '@pipeline/core/pki';
import { IDP_CLIENT_KEYS_DIR, localClientKey } from '../../../../scripts/local/client-keys';
import { TABLES } from '@pipeline/resources';
import { createTestTables } from '../../../../scripts/local/resources';
import { opensslVerifyChain } from '../../../../scripts/local/verify/openssl';
import { localIssuer, signerOf } from '../../../../scripts/local/client';
import { TEST_CITIZENS } from '../../../../scripts/local/idp/citizens';
import { CLIENT_IDS } from '../../../../scripts/local/idp/clients';
import { obtainIdToken } from '../../../../scripts/client/src/oidc-login';
import { keyAndCsr } from '../../../ca/tests/helpers';
import type { handler as Handler } from '..';
import { restoreEnvAfterAll } from '../../../test-support/env';

restoreEnvAfterAll();

const config = loadConfig(process.env);
const citizen = TEST_CITIZENS[0];
const signer = signerOf(citizen);
let hsm: Pkcs11Hsm;
let doc: DynamoDBDocumentClient;
let tables: { certificates: string; audit: string };
let handler: typeof Handler;
const keys: PrivateKeyRef[] = [];
let logged = '';
let spies: jest.SpyInstance[] = [];

beforeAll(async () => {
  tables = await createTestTables(['certificates', 'audit']);
  process.env[TABLES.certificates.envVar] = tables.certificates;
  process.env[TABLES.audit.envVar] = tables.audit;
  // The Jest set-up keeps logs at WARN; this test reads the handler's INFO lines.
  process.env.LOG_LEVEL = 'INFO';
  ({ handler } = await import('..'));
  hsm = await connectHsm(config.hsm, config.aws);
  doc = documentClient(config.aws);
  // Powertools writes INFO to stdout and WARN/ERROR to stderr: capture both.
  spies = [process.stdout, process.stderr].map((stream) =>
    jest.spyOn(stream, 'write').mockImplementation((chunk: string | Uint8Array) => {
      logged += chunk.toString();
      return true;
    }),
  );
});

afterAll(async () => {
  for (const spy of spies) spy.mockRestore();
  for (const key of keys) await hsm.destroy(key);
  await hsm?.close();
  doc?.destroy();
});

/**
 * One item as the signer sends it: a fresh request, the citizen's login bound to it, a CSR; with
 * `shown`, the request has `message` and the citizen approved `shown` at the provider (the signature
 * extension).
 */
async function item(options: { message?: SignMessage; shown?: SignMessage } = {}): Promise<{
  requestId: string;
  csrDer: string;
  assertion: string;
  binding: AssertionBinding;
  signMessage?: SignMessage;
}> {
  const binding: AssertionBinding = {
    requestId: randomUUID(),
    digestAlgorithm: 'SHA-256',
    digest: createHash('sha256').update(randomUUID()).digest('base64'),
    keyType: 'EC-P256',
    signatureAlgorithm: 'ECDSA',
    format: 'raw',
    ...(options.message ? { signMessageHash: signMessageHash(options.message) } : {}),
  };
  const shown = options.shown ?? options.message;
  const { idToken } = await obtainIdToken({
    issuer: localIssuer(),
    clientId: CLIENT_IDS.signingService,
    personalIdentityNumber: citizen.personalIdentityNumber,
    nonce: assertionNonce(binding),
    ...(shown
      ? {
          signature: {
            key: localClientKey(CLIENT_IDS.signingService, IDP_CLIENT_KEYS_DIR),
            tbsData: binding.digest,
            signMessage: shown,
          },
        }
      : {}),
  });
  const { csrDer } = await keyAndCsr(hsm, 'EC-P256', keys, signer);
  return {
    requestId: binding.requestId,
    csrDer: csrDer.toString('base64'),
    assertion: idToken,
    binding,
    ...(options.message ? { signMessage: options.message } : {}),
  };
}

async function issue(items: unknown[]): Promise<IssueItemResult[]> {
  const answer = await handler({ action: 'issue-batch', items });
  if (!('results' in answer)) throw new Error(`batch refused: ${answer.error.code}`);
  return answer.results as IssueItemResult[];
}

it('issues a certificate naming the citizen of the verified login, and logs no personal data', async () => {
  const request = await item();
  const [result] = await issue([request]);
  if (!result.ok) throw new Error(`refused: ${result.error.code}`);
  expect(new X509Certificate(result.certificatePem).subject).toContain(`CN=${citizen.name}`);
  const verdict = opensslVerifyChain({
    rootPem: result.chainPem[1],
    intermediatePems: [result.chainPem[0]],
    leafPem: result.certificatePem,
  });
  expect(verdict.ok).toBe(true);
  expect(logged).toContain(result.serialHex);
  expect(logged).toContain(request.requestId);
  for (const value of Object.values(signer).filter((v) => v.length > 2)) expect(logged).not.toContain(value);
  expect(logged).not.toContain(request.csrDer.slice(0, 40));
  expect(logged).not.toContain(request.assertion.slice(-40));
  // The audit log holds the issuance: serial, hashes of the subject, key and assertion, never the names.
  const log = await new AuditRepository(doc, { tableName: tables.audit }).readAll();
  const issued = eventsOf(log).filter((e) => e.type === 'certificate.issued');
  expect(issued).toEqual([
    expect.objectContaining({
      requestId: request.requestId,
      serial: result.serialHex,
      assertionHash: createHash('sha256').update(request.assertion).digest('hex'),
      keySpkiHash: expect.stringMatching(/^[0-9a-f]{64}$/),
    }),
  ]);
  for (const value of Object.values(signer).filter((v) => v.length > 2))
    expect(JSON.stringify([...log.entries.values()])).not.toContain(value);
});

it("with a sign message: certifies on the provider's approval of it and records its hash; refuses a changed message or another text shown, a text outside the rules or none", async () => {
  const message: SignMessage = { text: 'Jag godkänner hyresavtalet.', mimeType: 'text/plain' };
  const approved = await item({ message });
  const changed = await item({ message });
  const otherShown = await item({
    message,
    shown: { text: 'Jag godkänner ingenting.', mimeType: 'text/plain' },
  });
  const invisible = await item({ message });
  const missing = await item({ message });
  const rtl: SignMessage = { text: 'Jag godkänner hyres\u200favtalet.', mimeType: 'text/plain' };
  const results = await issue([
    approved,
    { ...changed, binding: { ...changed.binding, signMessageHash: 'ab'.repeat(32) } },
    otherShown,
    {
      ...invisible,
      signMessage: rtl,
      binding: { ...invisible.binding, signMessageHash: signMessageHash(rtl) },
    },
    { ...missing, signMessage: undefined },
  ]);
  expect(results.map((r) => (r.ok ? 'issued' : r.error.code))).toEqual([
    'issued',
    'ASSERTION_BINDING_MISMATCH',
    'ASSERTION_APPROVAL_MISMATCH',
    'SIGN_MESSAGE_INVALID',
    'SIGN_MESSAGE_INVALID',
  ]);
  const log = await new AuditRepository(doc, { tableName: tables.audit }).readAll();
  expect(
    eventsOf(log).find((e) => e.type === 'certificate.issued' && e.requestId === approved.requestId),
  ).toMatchObject({
    signMessageHash: signMessageHash(message),
  });
  expect(logged).not.toContain('hyresavtalet');
});

it('returns named refusals per item, and refuses what is not an issuance batch', async () => {
  const good = await item();
  const [h, p] = good.assertion.split('.');
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ ...good, requestId: randomUUID() }, 'REQUEST_UNKNOWN'],
    [{ ...good, assertion: `${h}.${p}.AAAA` }, 'ASSERTION_SIGNATURE_INVALID'],
    [
      { ...good, binding: { ...good.binding, digest: Buffer.alloc(32, 1).toString('base64') } },
      'ASSERTION_BINDING_MISMATCH',
    ],
    [{ ...good, csrDer: 'not base64!' }, 'BAD_CERTIFICATE_REQUEST'],
    [{ ...good, assertion: undefined }, 'BAD_CERTIFICATE_REQUEST'],
    [{ ...good, csrDer: Buffer.from('garbage').toString('base64') }, 'BAD_CSR'],
  ];
  const results = await issue(cases.map(([event]) => event));
  expect(results).toEqual(
    cases.map(([, code]) => ({ ok: false, error: { code, message: expect.any(String) } })),
  );
  for (const code of cases.map(([, c]) => c)) expect(logged).toContain(`"code":"${code}"`);
  // Revocation is another function's: the CA does not revoke. Nor does it update a certificate on record
  // (it was released to its attempt as it was issued).
  for (const event of [
    { action: 'revoke', serial: 'ab', reason: 'keyCompromise', requestedBy: 'x' },
    { action: 'release-batch', items: [{ requestId: 'r', serialHex: 'ab', attemptId: 'a' }] },
    {},
    null,
  ]) {
    expect(await handler(event)).toEqual({
      ok: false,
      error: { code: 'BAD_BATCH', message: expect.any(String) },
    });
  }
});
