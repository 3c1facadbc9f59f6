/**
 * The Authentication Context extension (RFC 7773, ELN-0608) of the certificates the running local
 * pipeline issues, read back by tools that share no code with the CA (openssl asn1parse for the DER,
 * python3's xml.etree for the saci XML) and checked field by field against the assertion that came with
 * the request: a real login at the local OpenID Provider, and a registered client's request object.
 */
import { createHash, randomBytes } from 'node:crypto';
import { decodeJwt } from 'jose';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { documentClient, sqsClient } from '@pipeline/adapters/aws';
import { loadAwsConfig } from '@pipeline/config';
import { CLIENT_VOUCHED_AUTHN_CONTEXT, SACI_CONTEXT_TYPE } from '@pipeline/core/identity';
import type { SignRequestRecord } from '@pipeline/core/signing';
import { TABLES } from '@pipeline/resources';
import { RequestRepository } from '../../../../lambdas/adapters/dynamodb/src/request-repository';
import { parseSamlAuthContext, readAuthContextExtension } from '../../verify/auth-context';
import { runOpenssl } from '../../verify/openssl';
import { call, sampleRequest, signerOf, type SignRequestView } from '../../client';
import { localClientKeysEnv } from '../../client-keys';
import { LOA2_CITIZEN_INDEX, TEST_CITIZENS } from '../../idp/citizens';
import { startLocalPipeline, type LocalPipeline } from '../pipeline';

jest.setTimeout(120_000);

/** An e-service registered to vouch for its signers in request objects, beside the identity provider. */
const VOUCHER = { clientId: 'vouching-eservice', apiKey: `vouch-${randomBytes(8).toString('hex')}` };
let pipeline: LocalPipeline;

beforeAll(async () => {
  pipeline = await startLocalPipeline({
    resourcePrefix: `authctx-${Date.now().toString(36)}-`,
    log: () => undefined,
    env: {
      PORT: '0',
      POOL_TARGETS: 'EC-P256=6,RSA-2048=2',
      LOCAL_KEYGEN_INTERVAL_SECONDS: '3600',
      LOCAL_API_CLIENTS: `${VOUCHER.clientId}:${VOUCHER.apiKey}`,
      ...localClientKeysEnv([VOUCHER.clientId]),
    },
  });
  await pipeline.runKeygen();
});

afterAll(async () => {
  await pipeline?.stop();
});

async function signed(body: unknown, apiKey = pipeline.apiKey): Promise<SignRequestView> {
  const accepted = await call<{ id?: string }>(`${pipeline.url}/sign-requests`, { apiKey, body });
  expect(accepted.status).toBe(202);
  const view = (
    await call<SignRequestView>(`${pipeline.url}/sign-requests/${accepted.body.id}?wait=20`, { apiKey })
  ).body;
  expect(view.status).toBe('signed');
  return view;
}

const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');
/** xs:dateTime as the extension writes it: UTC, whole seconds. */
const instant = (seconds: number): string => new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');

/** The extension of a certificate, decoded: one saci context, not critical, its XML parsed. */
function authContextOf(certificatePem: string) {
  const extension = readAuthContextExtension(certificatePem);
  expect(extension).toBeDefined();
  expect(extension!.critical).toBe(false);
  expect(extension!.contexts).toHaveLength(1);
  expect(extension!.contexts[0].contextType).toBe(SACI_CONTEXT_TYPE);
  const parsed = parseSamlAuthContext(extension!.contexts[0].contextInfo!);
  expect(parsed.root).toBe(`{${SACI_CONTEXT_TYPE}}SAMLAuthContext`);
  return { ...parsed, valueLength: extension!.valueLength };
}

const subjectOf = (certificatePem: string): string =>
  runOpenssl(['x509', '-in', 'c.pem', '-noout', '-subject', '-nameopt', 'utf8,sep_comma_plus'], {
    'c.pem': certificatePem,
  }).stdout;

test.each([
  ['EC-P256', 'raw'],
  ['RSA-2048', 'cms'],
] as const)(
  'a login at the identity provider (%s, %s): issuer, instant, level, token, service and each attribute the subject took from it',
  async (keyType, format) => {
    const citizen = TEST_CITIZENS.filter((_, i) => i !== LOA2_CITIZEN_INDEX)[keyType === 'EC-P256' ? 0 : 1];
    const request = await sampleRequest(keyType, 0, { citizen, format });
    const idToken = request.body.identityAssertion;
    const claims = decodeJwt(idToken);
    const view = await signed(request.body);

    const context = authContextOf(view.certificate!);
    expect(context.authContextInfo).toEqual({
      IdentityProvider: claims.iss,
      AuthenticationInstant: instant(claims.auth_time as number),
      AuthnContextClassRef: claims.acr,
      AssertionRef: sha256Hex(idToken),
      ServiceID: claims.aud,
    });
    const pin = claims['https://id.oidc.se/claim/personalIdentityNumber'];
    expect(pin).toBe(citizen.personalIdentityNumber);
    // The subject's C is the configured country of a Swedish identity provider: no claim, no mapping.
    expect(context.mappings).toEqual([
      {
        type: 'rdn',
        ref: '2.5.4.4',
        name: 'urn:oid:2.5.4.4',
        friendlyName: 'sn',
        values: [claims.family_name],
      },
      {
        type: 'rdn',
        ref: '2.5.4.42',
        name: 'urn:oid:2.5.4.42',
        friendlyName: 'givenName',
        values: [claims.given_name],
      },
      {
        type: 'rdn',
        ref: '2.5.4.5',
        name: 'urn:oid:1.2.752.29.4.13',
        friendlyName: 'personalIdentityNumber',
        values: [pin],
      },
      {
        type: 'rdn',
        ref: '2.5.4.3',
        name: 'urn:oid:2.16.840.1.113730.3.1.241',
        friendlyName: 'displayName',
        values: [claims.name],
      },
    ]);
    // Each mapped value is the one in the subject (the identity provider gives them in NFC).
    const subject = subjectOf(view.certificate!);
    expect(subject).toContain(`serialNumber=${pin}`);
    expect(subject).toContain(`GN=${claims.given_name}`);
    expect(subject).toContain(`SN=${claims.family_name}`);
    expect(subject).toContain(`CN=${claims.name}`);
    expect(context.valueLength).toBeLessThan(1500);
    // Leaves only: the issuing CA's certificate in the chain has none.
    expect(view.chain).toHaveLength(2);
    expect(readAuthContextExtension(view.chain![0])).toBeUndefined();
  },
);

test("a registered client's request object: the client named as the party that vouched, and the attributes it vouched for", async () => {
  const citizen = TEST_CITIZENS[0];
  const request = await sampleRequest('EC-P256', 0, { citizen, vouchedBy: VOUCHER.clientId });
  const requestObject = request.body.identityAssertion;
  const claims = decodeJwt(requestObject);
  expect(claims.iss).toBe(VOUCHER.clientId);
  const view = await signed(request.body, VOUCHER.apiKey);

  const context = authContextOf(view.certificate!);
  expect(context.authContextInfo).toEqual({
    IdentityProvider: VOUCHER.clientId,
    AuthenticationInstant: instant(claims.iat!),
    AuthnContextClassRef: CLIENT_VOUCHED_AUTHN_CONTEXT,
    AssertionRef: sha256Hex(requestObject),
    ServiceID: claims.aud,
  });
  expect(context.mappings).toEqual(
    [
      ['2.5.4.6', 'SE'],
      ['2.5.4.4', citizen.familyName],
      ['2.5.4.42', citizen.givenName],
      ['2.5.4.5', citizen.personalIdentityNumber],
      ['2.5.4.3', citizen.name],
    ].map(([oid, value]) => ({ type: 'rdn', ref: oid, name: `urn:oid:${oid}`, values: [value] })),
  );
});

test('the CA states the assertion it verified, whatever the request record says about it', async () => {
  // Someone who can write the requests table plants a record whose stored evidence claims another
  // identity provider, a higher level and another time, beside a real login, and queues it.
  const citizen = TEST_CITIZENS[1];
  const request = await sampleRequest('EC-P256', 0, { citizen });
  const idToken = request.body.identityAssertion;
  const claims = decodeJwt(idToken);
  const { identityAssertion: _token, requestId, ...binding } = request.body;
  const now = Date.now();
  const record: SignRequestRecord = {
    ...binding,
    id: requestId,
    clientId: pipeline.clients[0].clientId,
    status: 'received',
    signer: signerOf(citizen),
    identity: {
      source: 'assertion',
      issuer: 'https://forged-idp.example.com',
      subject: 'forged',
      assertionHash: '00'.repeat(32),
      acr: 'http://id.elegnamnden.se/loa/1.0/loa4',
      authTime: Date.UTC(2020, 0, 1),
    },
    identityAssertion: idToken,
    receivedAt: now,
    expiresAt: Math.floor(now / 1000) + 3600,
  };
  const doc = documentClient(loadAwsConfig(process.env));
  const sqs = sqsClient(loadAwsConfig(process.env));
  try {
    await new RequestRepository(doc, { tableName: pipeline.env[TABLES.requests.envVar] }).create(record);
    await sqs.send(new SendMessageCommand({ QueueUrl: pipeline.queueUrl, MessageBody: requestId }));
  } finally {
    doc.destroy();
    sqs.destroy();
  }
  const view = (
    await call<SignRequestView>(`${pipeline.url}/sign-requests/${requestId}?wait=20`, {
      apiKey: pipeline.apiKey,
    })
  ).body;
  expect(view.status).toBe('signed');
  expect(authContextOf(view.certificate!).authContextInfo).toEqual({
    IdentityProvider: claims.iss,
    AuthenticationInstant: instant(claims.auth_time as number),
    AuthnContextClassRef: claims.acr,
    AssertionRef: sha256Hex(idToken),
    ServiceID: claims.aud,
  });
});
