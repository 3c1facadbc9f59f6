/**
 * `npm run audit -- prove` against the whole local pipeline, for one request of every format and level the
 * API offers, signed through the e-service's client modules (scripts/client): raw, CAdES B-B, B-LT (its
 * CMS carries the root's CRL and the OCSP response in `crls`) and B-LTA, PAdES, and several documents under
 * one login (one receipt proves each document's signature). A stored signature changed afterwards is not
 * proven.
 */
import { randomBytes } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '@pipeline/adapters/aws';
import { loadAwsConfig } from '@pipeline/config';
import { TABLES, tableName } from '@pipeline/resources';
import { obtainIdToken } from '../../../client/src/oidc-login';
import { signDocument, signDocuments } from '../../../client/src/sign-document';
import { SigningClient, signRequestNonce, type SignBinding } from '../../../client/src/signing-client';
import { localIssuer } from '../../client';
import { TEST_CITIZENS } from '../../idp/citizens';
import { CLIENT_IDS } from '../../idp/clients';
import { minimalPdf } from '../../verify/pdf-validator';
import { startLocalPipeline, type LocalPipeline } from '../pipeline';
import { auditCli } from './support/hostile-pipeline';

jest.setTimeout(240_000);

let pipeline: LocalPipeline;
let client: SigningClient;
let pki: string;

beforeAll(async () => {
  pipeline = await startLocalPipeline({
    resourcePrefix: `prove-${Date.now().toString(36)}-`,
    log: () => undefined,
    env: { PORT: '0', POOL_TARGETS: 'EC-P256=10', LOCAL_KEYGEN_INTERVAL_SECONDS: '3600', LOG_LEVEL: 'WARN' },
  });
  await pipeline.runKeygen();
  client = new SigningClient({ apiUrl: pipeline.url, apiKey: pipeline.apiKey });
  pki = pipeline.url.replace(/\/v1$/, '/pki');
  // B-LT needs the root CRL published.
  for (let i = 0; i < 100 && !(await fetch(`${pki}/root.crl`)).ok; i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
}, 180_000);

afterAll(() => pipeline?.stop());

const login = async (nonce: string): Promise<string> =>
  (
    await obtainIdToken({
      issuer: localIssuer(),
      clientId: CLIENT_IDS.signingService,
      personalIdentityNumber: TEST_CITIZENS[2].personalIdentityNumber,
      nonce,
    })
  ).idToken;

/** A raw signature of a random digest; its request id. */
async function signRaw(): Promise<string> {
  const binding: SignBinding = {
    requestId: SigningClient.newRequestId(),
    digestAlgorithm: 'SHA-256',
    digest: randomBytes(32).toString('base64'),
    keyType: 'EC-P256',
    signatureAlgorithm: 'ECDSA',
    format: 'raw',
  };
  const result = await client.submitAndWait(
    { ...binding, identityAssertion: await login(signRequestNonce(binding)) },
    60,
  );
  expect([result.status, result.signature === undefined]).toEqual(['signed', false]);
  return binding.requestId;
}

const prove = (id: string) => auditCli(pipeline, 'prove', id);

test('prove: raw, CAdES B-B, B-LT and B-LTA, PAdES and several documents under one login, each proven', async () => {
  const text = (): Buffer => Buffer.from(`hello, CAdES ${randomBytes(4).toString('hex')}\n`);
  const cades = async (level: 'B-B' | 'B-LT' | 'B-LTA') => {
    const signed = await signDocument({ client, login, document: text(), level, tsaUrl: `${pki}/tsa` });
    expect(signed.level).toBe(level);
    return signed.requestId;
  };
  const pades = await signDocument({ client, login, document: minimalPdf('Hello'), pdf: true });
  expect(pades.level).toBe('B-LT');
  const documents = await signDocuments({
    client,
    login,
    documents: [
      { document: minimalPdf('First'), name: 'first.pdf', pdf: true },
      { document: text(), name: 'hello.txt' },
      { document: text(), name: 'notes.txt', level: 'B-B' },
    ],
  });
  expect(documents.outputs).toHaveLength(3);
  const requests: Array<[string, string]> = [
    ['raw', await signRaw()],
    ['CAdES B-B', await cades('B-B')],
    ['CAdES B-LT', await cades('B-LT')],
    ['CAdES B-LTA', await cades('B-LTA')],
    ['PAdES B-LT', pades.requestId],
    ['three documents', documents.requestId],
  ];
  for (const [what, id] of requests) {
    const proof = prove(id);
    expect([what, proof.status, proof.stderr]).toEqual([what, 0, '']);
    expect(proof.stdout).toContain(`proven: request ${id}`);
    expect(proof.stdout).not.toContain('FAILED');
    if (what === 'three documents') {
      for (const i of [0, 1, 2]) {
        expect(proof.stdout).toContain(
          `document ${i}: signature.made for ${id}, hash of the returned signature`,
        );
      }
    } else {
      expect(proof.stdout).toContain(`signature.made for ${id}, hash of the returned signature`);
    }
  }

  // The raw request's stored signature replaced (as a table write would): its receipt no longer proves it.
  const [, rawId] = requests[0];
  const doc = documentClient(loadAwsConfig(process.env));
  try {
    await doc.send(
      new UpdateCommand({
        TableName: tableName(TABLES.requests),
        Key: { id: rawId },
        UpdateExpression: 'SET #s = :s',
        ExpressionAttributeNames: { '#s': 'signature' },
        ExpressionAttributeValues: { ':s': randomBytes(72).toString('base64') },
      }),
    );
  } finally {
    doc.destroy();
  }
  const changed = prove(rawId);
  expect(changed.status).toBe(1);
  expect(changed.stdout).toContain(
    `FAILED: no signature.made for ${rawId} in the entry with the hash of the returned signature`,
  );
  expect(changed.stdout).toContain(`NOT PROVEN: request ${rawId}`);
});
