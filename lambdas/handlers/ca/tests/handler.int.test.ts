/**
 * The CA Lambda handler with its real set-up (configuration, HSM login, CA certificates from the
 * bootstrap, DynamoDB Local tables named through the environment).
 */
import { X509Certificate } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../../../adapters/aws/src';
import { connectHsm, type Pkcs11Hsm, type PrivateKeyRef } from '../../../adapters/hsm/src';
import { loadConfig } from '../../../config/src';
import { AuditRepository } from '../../../adapters/dynamodb/src/audit-repository';
import { eventsOf } from '../../../core/src';
import { TABLES } from '../../../resources/src';
import { createTestTables } from '../../../test-support/dynamodb';
import { opensslVerifyChain } from '../../../../scripts/local/verify/openssl';
import { IDENTITY, keyAndCsr, putRequest } from '../../../ca/tests/helpers';
import type { handler as Handler } from '..';
import { restoreEnvAfterAll } from '../../../test-support/env';

restoreEnvAfterAll();

const config = loadConfig();
let hsm: Pkcs11Hsm;
let doc: DynamoDBDocumentClient;
let tables: { requests: string; certificates: string; audit: string };
let handler: typeof Handler;
const keys: PrivateKeyRef[] = [];
let logged = '';
let spies: jest.SpyInstance[] = [];

beforeAll(async () => {
  tables = await createTestTables(['requests', 'certificates', 'audit']);
  process.env[TABLES.requests.envVar] = tables.requests;
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

it('issues a certificate that verifies against the chain, and logs no personal data', async () => {
  const { csrDer } = await keyAndCsr(hsm, 'EC-P256', keys);
  const request = await putRequest(doc, tables.requests);
  const result = await handler({ requestId: request.id, csrDer: csrDer.toString('base64') });
  if (!result.ok) throw new Error(`refused: ${result.error.code}`);
  expect(new X509Certificate(result.certificatePem).subject).toContain('CN=Åsa Öberg-Nilsson');
  const verdict = opensslVerifyChain({
    rootPem: result.chainPem[1],
    intermediatePems: [result.chainPem[0]],
    leafPem: result.certificatePem,
  });
  expect(verdict.ok).toBe(true);
  expect(logged).toContain(result.serialHex);
  expect(logged).toContain(request.id);
  for (const value of Object.values(IDENTITY).filter((v) => v.length > 2))
    expect(logged).not.toContain(value);
  expect(logged).not.toContain(csrDer.toString('base64').slice(0, 40));
  // The audit log holds the issuance: serial and a hash of the subject, never the names.
  const log = await new AuditRepository(doc, { tableName: tables.audit }).readAll();
  const issued = eventsOf(log).filter((e) => e.type === 'certificate.issued');
  expect(issued).toEqual([
    expect.objectContaining({ requestId: request.id, serial: result.serialHex.toLowerCase() }),
  ]);
  for (const value of Object.values(IDENTITY).filter((v) => v.length > 2))
    expect(JSON.stringify([...log.entries.values()])).not.toContain(value);
});

it('returns named refusals as { ok: false, error: { code, message } }', async () => {
  const { csrDer } = await keyAndCsr(hsm, 'EC-P256', keys);
  const signed = await putRequest(doc, tables.requests, { status: 'signed' });
  const hostile = await putRequest(doc, tables.requests, { signer: { ...IDENTITY, surname: 'Eve,CN=Root' } });
  const cases: Array<[Parameters<typeof handler>[0], string]> = [
    [{ requestId: signed.id, csrDer: csrDer.toString('base64') }, 'REQUEST_NOT_SIGNING'],
    [{ requestId: 'unknown', csrDer: csrDer.toString('base64') }, 'REQUEST_UNKNOWN'],
    [{ requestId: hostile.id, csrDer: csrDer.toString('base64') }, 'INVALID_IDENTITY'],
    [{ requestId: signed.id, csrDer: 'not base64!' }, 'BAD_CSR'],
    [{ requestId: signed.id, csrDer: Buffer.from('garbage').toString('base64') }, 'BAD_CSR'],
  ];
  for (const [event, code] of cases) {
    const result = await handler(event);
    expect(result).toEqual({ ok: false, error: { code, message: expect.any(String) } });
  }
  for (const code of cases.map(([, c]) => c)) expect(logged).toContain(`"code":"${code}"`);
  expect(logged).not.toContain('Eve,CN=Root');
});
