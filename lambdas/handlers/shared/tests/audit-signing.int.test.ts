/**
 * The CA and CRL functions' audit log signs each entry's head with the audit key as their CA user's HSM
 * login finds it (SoftHSM: the CA keys and the audit key share a token; on CloudHSM the key is shared
 * with the CA's crypto user). A login that cannot find the key (the OCSP responder's own token) still
 * appends, unsigned, and says so in the log.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '@pipeline/adapters/aws';
import { connectHsm, type Pkcs11Hsm } from '@pipeline/adapters/hsm';
import { loadAuditConfig, loadCaConfig, loadConfig } from '@pipeline/config';
import { auditPublicKey, verifySignedHead } from '@pipeline/core/audit';
import { eventsFor } from '../../../audit/tests/helpers';
import { restoreEnvAfterAll } from '../../../test-support/env';
import { createTestTables } from '../../../../scripts/local/resources';
import { auditLogSigningWith } from '../audit-signing';

restoreEnvAfterAll();

const PEM = join(__dirname, '../../../../.local/audit/audit-key.pem');
const { hsm: hsmConfig, aws } = loadConfig(process.env);
let doc: DynamoDBDocumentClient;
let caLogin: Pkcs11Hsm;
let ocspLogin: Pkcs11Hsm;
let auditTable: string;

beforeAll(async () => {
  const ca = loadCaConfig(process.env);
  doc = documentClient(aws);
  caLogin = await connectHsm({ ...hsmConfig, pinSource: ca.pinSource });
  ocspLogin = await connectHsm({ ...hsmConfig, tokenLabel: ca.ocspTokenLabel, pinSource: ca.ocspPinSource });
  auditTable = (await createTestTables(['audit'])).audit;
});

afterAll(async () => {
  doc?.destroy();
  await caLogin?.close();
  await ocspLogin?.close();
});

const logger = (): Logger => new Logger({ serviceName: 'probe', logLevel: 'INFO' });
const settings = () => ({ config: loadAuditConfig(process.env), tableName: auditTable });

test("with the CA user's login, every receipt carries a head the audit public key verifies", async () => {
  const log = await auditLogSigningWith(doc, caLogin, logger(), settings());
  const receipts = await log.appendMany(eventsFor(1));
  expect(receipts).toHaveLength(4);
  const key = auditPublicKey(readFileSync(PEM, 'utf8'));
  for (const r of receipts) {
    expect(r.head).toBeDefined();
    expect(verifySignedHead({ chain: r.chain, sequence: r.sequence, hash: r.hash }, r.head!, key)).toBe(true);
  }
});

test('a login without the audit key appends unsigned heads and logs why', async () => {
  const probe = logger();
  const error = jest.spyOn(probe, 'error').mockImplementation(() => undefined);
  const log = await auditLogSigningWith(doc, ocspLogin, probe, settings());
  const receipts = await log.appendMany(eventsFor(2));
  expect(receipts).toHaveLength(4);
  expect(receipts.every((r) => r.head === undefined)).toBe(true);
  expect(error).toHaveBeenCalledWith('audit key unavailable: heads unsigned', {
    errorCode: 'AUDIT_NOT_READY',
  });
});
