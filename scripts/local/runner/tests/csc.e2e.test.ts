/**
 * The Cloud Signature Consortium API v2 against the running local pipeline, as a CSC client drives it:
 * info, oauth2/authorize with PKCE, the citizen's login and approval at the local OpenID Provider (the
 * scripted user agent), the service's callback, oauth2/token with the client's secret, credentials/list
 * and info, and signatures/signHash through the pipeline (the signature verifies under the certificate
 * the CA issued for that citizen). Then the attacks, each refused with its CSC error and nothing signed
 * or issued: a token used twice, a code redeemed by another client, an expired token, a wrong PKCE
 * verifier, a wrong client secret.
 */
import { X509Certificate, createHash, randomBytes, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { GetCommand, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '@pipeline/adapters/aws';
import { loadAwsConfig } from '@pipeline/config';
import { seal, unseal } from '@pipeline/core/csc';
import { TABLES } from '@pipeline/resources';
import { loginAtLocalIdp } from '../../../client/src/oidc-login';
import { TEST_CITIZENS } from '../../idp/citizens';
import { LOCAL_DIR } from '../../paths';
import { opensslCmsVerify, opensslVerifyChain, runOpenssl } from '../../verify/openssl';
import { startLocalPipeline, type LocalPipeline } from '../pipeline';
import {
  authorizationDetails,
  authorizationServerOf,
  CredentialInfo,
  credentialsInfoRequest,
  CredentialsList,
  credentialsListRequest,
  RsspMetadata,
  SignHashResponse,
  signHashRequest,
  TokenResponse,
} from './support/eudi-rqes';

jest.setTimeout(180_000);

const REDIRECT = 'http://127.0.0.1/csc-client/callback';
const TOKEN_TTL_SECONDS = 8;
const AUTHORIZE_PER_SOURCE = 300;
const PER_CLIENT = 100;
const client = (clientId: string) => ({ clientId, secret: randomBytes(24).toString('base64url') });
const ALICE = client('csc-alice');
const MALLORY = client('csc-mallory');
const CITIZEN = TEST_CITIZENS[0];

let pipeline: LocalPipeline;
let csc: string;

beforeAll(async () => {
  pipeline = await startLocalPipeline({
    resourcePrefix: `csc-${Date.now().toString(36)}-`,
    log: () => undefined,
    env: {
      PORT: '0',
      // Every service login certifies a key too (its one-time credential).
      POOL_TARGETS: 'EC-P256=24',
      LOCAL_KEYGEN_INTERVAL_SECONDS: '3600',
      CSC_ACCESS_TOKEN_TTL_SECONDS: String(TOKEN_TTL_SECONDS),
      // Above what the tests before the abuse ones spend, below what those send.
      LOCAL_CSC_SOURCE_PER_MINUTE: '5000',
      LOCAL_CSC_AUTHORIZE_SOURCE_PER_MINUTE: String(AUTHORIZE_PER_SOURCE),
      LOCAL_CSC_CLIENT_PER_MINUTE: String(PER_CLIENT),
      CSC_CLIENTS: JSON.stringify(
        [ALICE, MALLORY].map((c) => ({
          clientId: c.clientId,
          name: `E-service ${c.clientId}`,
          secretHash: createHash('sha256').update(c.secret).digest('hex'),
          redirectUris: [REDIRECT],
        })),
      ),
    },
  });
  await pipeline.runKeygen();
  csc = pipeline.csc!.url;
});

afterAll(async () => {
  await pipeline?.stop();
});

interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

async function post(
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
  form = false,
): Promise<Answer> {
  const res = await fetch(`${csc}${path}`, {
    method: 'POST',
    headers: { 'content-type': form ? 'application/x-www-form-urlencoded' : 'application/json', ...headers },
    body: form ? new URLSearchParams(body as Record<string, string>).toString() : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const basic = (c: { clientId: string; secret: string }) =>
  `Basic ${Buffer.from(`${encodeURIComponent(c.clientId)}:${encodeURIComponent(c.secret)}`).toString('base64')}`;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

interface Authorized {
  readonly code: string;
  readonly verifier: string;
  readonly hash: string;
  readonly document: Buffer;
  /** Every authorized document and its hash (base64url), in order (the first is `document`). */
  readonly documents: readonly Buffer[];
  readonly hashes: readonly string[];
}

/**
 * oauth2/authorize with PKCE -> the local IdP (login and, for a credential, approval of the sign message
 * for the hash) -> the service's callback -> the client's redirect URI with the code and its state.
 */
async function authorize(
  who: { clientId: string },
  scope: 'service' | 'credential',
  options: {
    readonly credentialID?: string;
    readonly description?: string;
    /** Several documents: authorization_details with documentDigests, each labelled. */
    readonly documents?: number;
    /** Pushed first (oauth2/pushed_authorize) by this client. */
    readonly pushedBy?: { readonly clientId: string; readonly secret: string };
    /** An authorization for signDoc. */
    readonly signDoc?: { readonly signature_format: string; readonly conformance_level: string };
    /** authorization_details as given, for the hashes of documents made here (set `documents`). */
    readonly details?: (credentialID: string, hashes: string[]) => unknown[];
  } = {},
): Promise<Authorized> {
  const verifier = randomBytes(32).toString('base64url');
  const state = randomBytes(8).toString('hex');
  const documents = Array.from({ length: options.documents ?? 1 }, () => randomBytes(64));
  const hashes = documents.map((d) => createHash('sha256').update(d).digest('base64url'));
  const [document, hash] = [documents[0], hashes[0]];
  const url = new URL(`${csc}/oauth2/authorize`);
  const params: Record<string, string> = {
    response_type: 'code',
    client_id: who.clientId,
    redirect_uri: REDIRECT,
    scope,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state,
    ...(scope === 'credential' && options.details
      ? {
          authorization_details: JSON.stringify(
            options.details(
              options.credentialID ?? 'onetime-ec-p256',
              hashes.map((h) => Buffer.from(h, 'base64url').toString('base64')),
            ),
          ),
        }
      : scope === 'credential' && options.documents !== undefined
        ? {
            authorization_details: JSON.stringify([
              {
                type: 'credential',
                credentialID: options.credentialID ?? 'onetime-ec-p256',
                hashAlgorithmOID: '2.16.840.1.101.3.4.2.1',
                documentDigests: hashes.map((h, i) => ({ hash: h, label: `document-${i + 1}.pdf` })),
                ...options.signDoc,
              },
            ]),
          }
        : scope === 'credential'
          ? {
              ...options.signDoc,
              credentialID: options.credentialID ?? 'onetime-ec-p256',
              numSignatures: '1',
              hashes: hash,
              hashAlgorithmOID: '2.16.840.1.101.3.4.2.1',
              ...(options.description ? { description: options.description } : {}),
            }
          : {}),
  };
  if (options.pushedBy) {
    // RFC 9126: the parameters go to oauth2/pushed_authorize (client authenticated), the user agent
    // only carries the client id and the request_uri.
    const pushed = await post(
      '/oauth2/pushed_authorize',
      params,
      { authorization: basic(options.pushedBy) },
      true,
    );
    expect(pushed.status).toBe(201);
    expect(pushed.body).toEqual({
      request_uri: expect.stringMatching(/^urn:ietf:params:oauth:request_uri:/),
      expires_in: 60,
    });
    url.searchParams.set('client_id', who.clientId);
    url.searchParams.set('request_uri', pushed.body.request_uri as string);
  } else {
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  }
  const started = await fetch(url, { redirect: 'manual' });
  expect(started.status).toBe(302);
  const toIdp = new URL(started.headers.get('location')!);
  expect(toIdp.origin).toBe(new URL(process.env.LOCAL_IDP_ISSUER!).origin);
  const atCallback = await loginAtLocalIdp(
    toIdp,
    process.env.CSC_IDP_REDIRECT_URI!,
    CITIZEN.personalIdentityNumber,
    'sign',
  );
  const back = await fetch(atCallback, { redirect: 'manual' });
  expect(back.status).toBe(302);
  const returned = new URL(back.headers.get('location')!);
  expect(`${returned.origin}${returned.pathname}`).toBe(REDIRECT);
  expect(returned.searchParams.get('state')).toBe(state);
  expect(returned.searchParams.get('error')).toBeNull();
  return { code: returned.searchParams.get('code')!, verifier, hash, document, documents, hashes };
}

async function tokenFor(who: { clientId: string; secret: string }, authorized: Authorized): Promise<Answer> {
  return post(
    '/oauth2/token',
    {
      grant_type: 'authorization_code',
      code: authorized.code,
      code_verifier: authorized.verifier,
      redirect_uri: REDIRECT,
    },
    { authorization: basic(who) },
    true,
  );
}

const rootPem = (): string => readFileSync(join(LOCAL_DIR, 'ca', 'root.pem'), 'utf8');

/** A signDoc answer's CMS, one per document, each verified by openssl over its document. */
function signedCms(signed: Answer, documents: readonly Buffer[]): Buffer[] {
  expect(signed.status).toBe(200);
  const objects = signed.body.SignatureObject as string[];
  expect(objects).toHaveLength(documents.length);
  return objects.map((object, i) => {
    const cms = Buffer.from(object, 'base64');
    expect(opensslCmsVerify({ cms, content: documents[i], rootPem: rootPem() }).ok).toBe(true);
    return cms;
  });
}

const signHashBody = (a: Pick<Authorized, 'hash'> & Partial<Authorized>) => ({
  credentialID: 'onetime-ec-p256',
  hashes: (a.hashes ?? [a.hash]).map((h) => Buffer.from(h, 'base64url').toString('base64')),
  hashAlgorithmOID: '2.16.840.1.101.3.4.2.1',
  signAlgo: '1.2.840.10045.4.3.2',
  operationMode: 'S',
});

/** The pipeline's sign requests made for CSC clients, and the certificates the CA issued. */
async function cscRecords(): Promise<Record<string, unknown>[]> {
  const doc = documentClient(loadAwsConfig(process.env));
  try {
    const out = await doc.send(
      new ScanCommand({
        TableName: pipeline.env[TABLES.requests.envVar],
        FilterExpression: 'begins_with(clientId, :csc)',
        ExpressionAttributeValues: { ':csc': 'csc:' },
        ConsistentRead: true,
      }),
    );
    return out.Items ?? [];
  } finally {
    doc.destroy();
  }
}

async function issuedCertificates(): Promise<number> {
  const doc = documentClient(loadAwsConfig(process.env));
  try {
    const out = await doc.send(
      new ScanCommand({
        TableName: pipeline.env[TABLES.certificates.envVar],
        FilterExpression: 'begins_with(pk, :serial)',
        ExpressionAttributeValues: { ':serial': 'SERIAL#' },
        ConsistentRead: true,
      }),
    );
    return out.Count ?? 0;
  } finally {
    doc.destroy();
  }
}

const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

async function withCscTable<T>(
  f: (doc: ReturnType<typeof documentClient>, tableName: string) => Promise<T>,
): Promise<T> {
  const doc = documentClient(loadAwsConfig(process.env));
  try {
    return await f(doc, pipeline.env[TABLES.csc.envVar]);
  } finally {
    doc.destroy();
  }
}

/**
 * What an attacker who writes the table does to a stored value: edits it where it is readable JSON,
 * otherwise (sealed) flips a byte of it, the most they can do without the secret.
 */
function asAttacker(value: string, edit: (parsed: Record<string, unknown>) => void): string {
  try {
    const parsed = JSON.parse(value) as Record<string, unknown>;
    edit(parsed);
    return JSON.stringify(parsed);
  } catch {
    const flipped = Buffer.from(value);
    flipped[flipped.length - 5] ^= 1;
    return flipped.toString();
  }
}

describe('the CSC API v2', () => {
  it('describes itself (info, GET and POST)', async () => {
    const info = (await post('/info', {})).body;
    expect(info).toMatchObject({ specs: '2.0.0.2', authType: ['oauth2code'], oauth2: csc });
    expect(info.methods).toEqual(
      expect.arrayContaining(['oauth2/authorize', 'oauth2/token', 'signatures/signHash']),
    );
    expect((info.signAlgorithms as { algos: string[] }).algos).toContain('1.2.840.10045.4.3.2');
    const viaGet = await fetch(`${csc}/info`);
    expect(await viaGet.json()).toEqual(info);
    const wrongMethod = await fetch(`${csc}/signatures/signHash`);
    expect([wrongMethod.status, await wrongMethod.json()]).toEqual([
      405,
      { error: 'method_not_allowed', error_description: expect.any(String) },
    ]);
  });

  it("lists the login's own one-time credential with a service token; a type's info is still answered", async () => {
    const authorized = await authorize(ALICE, 'service');
    const token = await tokenFor(ALICE, authorized);
    expect(token.status).toBe(200);
    expect(token.body).toMatchObject({ token_type: 'Bearer', scope: 'service' });
    const headers = bearer(token.body.access_token as string);
    const list = await post('/credentials/list', { credentialInfo: true }, headers);
    expect(list.status).toBe(200);
    expect(list.body.credentialIDs).toEqual([expect.stringMatching(/^onetime-ec-p256\.[0-9a-f-]{36}$/)]);
    expect(list.body.credentialInfos).toEqual([
      expect.objectContaining({
        credentialID: (list.body.credentialIDs as string[])[0],
        cert: expect.objectContaining({ status: 'valid' }),
      }),
    ]);
    const info = await post('/credentials/info', { credentialID: 'onetime-ec-p256' }, headers);
    expect(info.body).toMatchObject({
      SCAL: '2',
      multisign: 50,
      auth: { mode: 'oauth2code' },
      key: { status: 'enabled', len: 256, curve: '1.2.840.10045.3.1.7' },
    });
    // A service token signs nothing.
    const refused = await post('/signatures/signHash', signHashBody(authorized), headers);
    expect(refused).toEqual({
      status: 403,
      body: { error: 'insufficient_scope', error_description: expect.any(String) },
    });
  });

  it("gives the certificate before the hashes: a service login's own one-time credential, its chain, then one approved signHash with its key", async () => {
    // Login 1 creates the credential; its certificate exists before any hash.
    const service = await tokenFor(ALICE, await authorize(ALICE, 'service'));
    const serviceHeaders = bearer(service.body.access_token as string);
    const list = await post('/credentials/list', {}, serviceHeaders);
    const own = (list.body.credentialIDs as string[])[0];
    expect(own).toMatch(/^onetime-ec-p256\.[0-9a-f-]{36}$/);
    const info = await post(
      '/credentials/info',
      { credentialID: own, certificates: 'chain', certInfo: true },
      serviceHeaders,
    );
    expect(info.status).toBe(200);
    const chain = (info.body.cert as { certificates: string[] }).certificates.map(
      (b64) => new X509Certificate(Buffer.from(b64, 'base64')),
    );
    expect(chain).toHaveLength(3);
    const [leaf] = chain;
    expect(leaf.subject).toContain(`serialNumber=${CITIZEN.personalIdentityNumber}`);
    expect(info.body.cert).toMatchObject({ serialNumber: leaf.serialNumber.toLowerCase() });
    // openssl: the chain ends in the local root and verifies.
    expect(chain[2].toString()).toBe(new X509Certificate(rootPem()).toString());
    expect(
      opensslVerifyChain({
        rootPem: chain[2].toString(),
        intermediatePems: [chain[1].toString()],
        leafPem: leaf.toString(),
      }).ok,
    ).toBe(true);
    // Mallory's token sees no such credential.
    const mallory = await tokenFor(MALLORY, await authorize(MALLORY, 'service'));
    const foreign = await post(
      '/credentials/info',
      { credentialID: own },
      bearer(mallory.body.access_token as string),
    );
    expect(foreign).toMatchObject({ status: 400, body: { error: 'invalid_request' } });

    // Login 2 approves the hashes for that credential; signHash as pyHanko sends it (CSC v1 names).
    const authorized = await authorize(ALICE, 'credential', { credentialID: own });
    const token = await tokenFor(ALICE, authorized);
    expect(token.body).toMatchObject({ scope: 'credential', credentialID: own });
    const headers = bearer(token.body.access_token as string);
    const signed = await post(
      '/signatures/signHash',
      {
        credentialID: own,
        SAD: token.body.access_token,
        hash: [Buffer.from(authorized.hash, 'base64url').toString('base64')],
        hashAlgo: '2.16.840.1.101.3.4.2.1',
        signAlgo: '1.2.840.10045.4.3.2',
      },
      headers,
    );
    expect(signed.status).toBe(200);
    const [signature] = (signed.body.signatures as string[]).map((b) => Buffer.from(b, 'base64'));
    expect(verify('sha256', authorized.document, leaf.publicKey, signature)).toBe(true);

    // A second approval for the same credential gets nothing signed: its key served once.
    const again = await authorize(ALICE, 'credential', { credentialID: own });
    const second = await tokenFor(ALICE, again);
    const refused = await post(
      '/signatures/signHash',
      { ...signHashBody(again), credentialID: own },
      bearer(second.body.access_token as string),
    );
    expect(refused).toEqual({
      status: 400,
      body: { error: 'invalid_request', error_description: expect.stringMatching(/one-time credential/) },
    });
  });

  it('signs the authorized hash once for the citizen who approved it, and refuses the token used again', async () => {
    const before = await issuedCertificates();
    const authorized = await authorize(ALICE, 'credential', { description: 'Building permit application' });
    const token = await tokenFor(ALICE, authorized);
    expect(token.status).toBe(200);
    expect(token.body).toMatchObject({ scope: 'credential', credentialID: 'onetime-ec-p256' });
    const headers = bearer(token.body.access_token as string);
    const signed = await post('/signatures/signHash', signHashBody(authorized), headers);
    expect(signed).toEqual({ status: 200, body: { signatures: [expect.any(String)] } });
    const [signature] = signed.body.signatures as string[];

    // The pipeline's record of it: Alice's, the citizen's certificate, a signature over the document.
    const records = (await cscRecords()).filter((r) => r.digest === signHashBody(authorized).hashes[0]);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ clientId: `csc:${ALICE.clientId}`, status: 'signed', signature });
    const certificate = new X509Certificate(records[0].certificate as string);
    expect(certificate.subject).toContain(`serialNumber=${CITIZEN.personalIdentityNumber}`);
    expect(
      verify('sha256', authorized.document, certificate.publicKey, Buffer.from(signature, 'base64')),
    ).toBe(true);
    expect(await issuedCertificates()).toBe(before + 1);

    // The same token again: used.
    const again = await post('/signatures/signHash', signHashBody(authorized), headers);
    expect(again).toEqual({
      status: 401,
      body: { error: 'invalid_token', error_description: 'the access token is already used' },
    });
    expect(await issuedCertificates()).toBe(before + 1);
    expect((await cscRecords()).filter((r) => r.digest === signHashBody(authorized).hashes[0])).toHaveLength(
      1,
    );
  });

  it('signs once when the same token is presented twice at the same moment', async () => {
    const before = await issuedCertificates();
    const authorized = await authorize(ALICE, 'credential');
    const token = await tokenFor(ALICE, authorized);
    const headers = bearer(token.body.access_token as string);
    const answers = await Promise.all(
      [1, 2].map(() => post('/signatures/signHash', signHashBody(authorized), headers)),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 401]);
    expect(answers.find((a) => a.status === 401)?.body.error).toBe('invalid_token');
    expect(await issuedCertificates()).toBe(before + 1);
  });

  it('refuses a code redeemed by another client (even with the right verifier), and keeps it for its own', async () => {
    const authorized = await authorize(ALICE, 'credential');
    const stolen = await tokenFor(MALLORY, authorized);
    expect(stolen).toEqual({
      status: 400,
      body: { error: 'invalid_grant', error_description: expect.any(String) },
    });
    // Alice's code was not spent by Mallory's attempt.
    const own = await tokenFor(ALICE, authorized);
    expect(own.status).toBe(200);
  });

  it('refuses a wrong PKCE verifier and a wrong client secret, issuing no token', async () => {
    const authorized = await authorize(ALICE, 'credential');
    const wrongSecret = await tokenFor({ ...ALICE, secret: 'not-the-secret' }, authorized);
    expect(wrongSecret.status).toBe(401);
    expect(wrongSecret.body).toEqual({
      error: 'invalid_client',
      error_description: 'client authentication failed',
    });
    const wrongVerifier = await tokenFor(ALICE, {
      ...authorized,
      verifier: randomBytes(32).toString('base64url'),
    });
    expect(wrongVerifier).toEqual({
      status: 400,
      body: {
        error: 'invalid_grant',
        error_description: 'the PKCE code_verifier does not match the code_challenge',
      },
    });
    // A code is spent by a wrong verifier: the right one no longer gets a token either.
    const afterwards = await tokenFor(ALICE, authorized);
    expect(afterwards.body.error).toBe('invalid_grant');
  });

  it('refuses an expired token, signing nothing', async () => {
    const authorized = await authorize(ALICE, 'credential');
    const token = await tokenFor(ALICE, authorized);
    expect(token.status).toBe(200);
    const before = await issuedCertificates();
    await new Promise((resolve) => setTimeout(resolve, (TOKEN_TTL_SECONDS + 1) * 1000));
    const late = await post(
      '/signatures/signHash',
      signHashBody(authorized),
      bearer(token.body.access_token as string),
    );
    // Refused as expired, or as unknown once the table's TTL (`expiresAt`) has removed the expired item.
    expect(late.status).toBe(401);
    expect(late.body.error).toBe('invalid_token');
    expect(['the access token is expired', 'the access token is unknown']).toContain(
      late.body.error_description,
    );
    expect(await issuedCertificates()).toBe(before);
    expect((await cscRecords()).filter((r) => r.digest === signHashBody(authorized).hashes[0])).toHaveLength(
      0,
    );
  });

  it('refuses a token whose grant was edited in the table (the hash swapped), signing nothing', async () => {
    // An attacker who can write the CSC table swaps the authorized hash for another document's: the
    // grant is sealed under the token, so the edited item opens as no grant at all.
    const authorized = await authorize(ALICE, 'credential', { documents: 3 });
    const token = await tokenFor(ALICE, authorized);
    const accessToken = token.body.access_token as string;
    const other = randomBytes(32).toString('base64');
    await withCscTable(async (doc, TableName) => {
      const Key = { pk: `TOKEN#${sha256Hex(accessToken)}` };
      const { Item } = await doc.send(new GetCommand({ TableName, Key }));
      const edited = asAttacker(Item!.grant as string, (grant) => {
        (
          grant as { signing: { binding: { documents: { digest: string }[] } } }
        ).signing.binding.documents[1].digest = other;
      });
      await doc.send(new PutCommand({ TableName, Item: { ...Item, grant: edited } }));
    });
    const before = await issuedCertificates();
    const hashes = signHashBody(authorized).hashes;
    const refused = await post(
      '/signatures/signHash',
      { ...signHashBody(authorized), hashes: [hashes[0], other, hashes[2]] },
      bearer(accessToken),
    );
    expect(refused).toEqual({
      status: 401,
      body: { error: 'invalid_token', error_description: 'the access token is unknown' },
    });
    expect(await issuedCertificates()).toBe(before);
    expect(
      (await cscRecords()).filter((r) => JSON.stringify(r.documents ?? '').includes(other)),
    ).toHaveLength(0);
  });

  it('answers a hash other than the authorized one with invalid_request, leaving the token usable', async () => {
    const authorized = await authorize(ALICE, 'credential');
    const token = await tokenFor(ALICE, authorized);
    const headers = bearer(token.body.access_token as string);
    const other = { ...signHashBody(authorized), hashes: [randomBytes(32).toString('base64')] };
    const refused = await post('/signatures/signHash', other, headers);
    expect(refused).toEqual({
      status: 400,
      body: {
        error: 'invalid_request',
        error_description: 'hashes are not the hashes this access token authorizes',
      },
    });
    expect(await post('/signatures/signHash', signHashBody(authorized), headers)).toMatchObject({
      status: 200,
    });
  });

  it('signs several authorized hashes under one login (the manifest), in order, and refuses the token for more or other hashes', async () => {
    const before = await issuedCertificates();
    const authorized = await authorize(ALICE, 'credential', { documents: 3 });
    const token = await tokenFor(ALICE, authorized);
    const headers = bearer(token.body.access_token as string);
    const body = signHashBody(authorized);
    // More hashes than authorized, fewer, another order, another hash: refused, the token stays usable.
    for (const hashes of [
      [...body.hashes, randomBytes(32).toString('base64')],
      body.hashes.slice(0, 2),
      [body.hashes[1], body.hashes[0], body.hashes[2]],
      [body.hashes[0], body.hashes[1], randomBytes(32).toString('base64')],
    ]) {
      expect(await post('/signatures/signHash', { ...body, hashes }, headers)).toEqual({
        status: 400,
        body: {
          error: 'invalid_request',
          error_description: 'hashes are not the hashes this access token authorizes',
        },
      });
    }
    const signed = await post('/signatures/signHash', body, headers);
    expect(signed.status).toBe(200);
    const signatures = signed.body.signatures as string[];
    expect(signatures).toHaveLength(3);
    // One request of the pipeline with the three documents, one certificate, the signatures in order.
    const records = (await cscRecords()).filter((r) =>
      JSON.stringify(r.documents ?? '').includes(body.hashes[0]),
    );
    expect(records).toHaveLength(1);
    const certificate = new X509Certificate(records[0].certificate as string);
    expect(certificate.subject).toContain(`serialNumber=${CITIZEN.personalIdentityNumber}`);
    authorized.documents.forEach((document, i) => {
      expect(verify('sha256', document, certificate.publicKey, Buffer.from(signatures[i], 'base64'))).toBe(
        true,
      );
    });
    expect(await issuedCertificates()).toBe(before + 1);
    // Used: not again, not for fewer hashes either.
    const again = await post('/signatures/signHash', { ...body, hashes: body.hashes.slice(0, 1) }, headers);
    expect(again.body.error).toBe('invalid_token');
    expect((await post('/signatures/signHash', body, headers)).body.error).toBe('invalid_token');
    expect(await issuedCertificates()).toBe(before + 1);
  });

  it('makes the CAdES B-LT of each authorized digest with signDoc, and keeps each token to its own method', async () => {
    const signDoc = { signature_format: 'C', conformance_level: 'AdES-B-LT' };
    const authorized = await authorize(ALICE, 'credential', { documents: 2, signDoc });
    const token = await tokenFor(ALICE, authorized);
    const headers = bearer(token.body.access_token as string);
    const hashes = signHashBody(authorized).hashes;
    const request = {
      credentialID: 'onetime-ec-p256',
      documentDigests: [
        { hashes, hashAlgorithmOID: '2.16.840.1.101.3.4.2.1', signAlgo: '1.2.840.10045.4.3.2', ...signDoc },
      ],
      returnValidationInfo: true,
    };
    // A signDoc token does not sign a hash; another format or level is refused; the token stays usable.
    const asHash = await post('/signatures/signHash', signHashBody(authorized), headers);
    expect(asHash).toEqual({
      status: 400,
      body: {
        error: 'invalid_request',
        error_description: 'this access token authorizes signatures/signDoc, not signatures/signHash',
      },
    });
    for (const other of [
      { signature_format: 'P', conformance_level: 'AdES-B-LT' },
      { signature_format: 'C', conformance_level: 'AdES-B-B' },
    ]) {
      const entry = { ...request.documentDigests[0], ...other };
      const refused = await post('/signatures/signDoc', { ...request, documentDigests: [entry] }, headers);
      expect(refused.body.error).toBe('invalid_request');
    }
    const signed = await post('/signatures/signDoc', request, headers);
    signedCms(signed, authorized.documents).forEach((cms, i) => {
      expect(opensslCmsVerify({ cms, content: authorized.documents[1 - i], rootPem: rootPem() }).ok).toBe(
        false,
      );
    });
    const info = signed.body.validationInfo as Record<string, string[]>;
    expect(info.certificates.length).toBeGreaterThan(1);
    expect(info.ocsp.length).toBeGreaterThan(0);
    for (const der of info.certificates)
      expect(() => new X509Certificate(Buffer.from(der, 'base64'))).not.toThrow();
  });

  it('signs hashes authorized alone (as standard clients ask) at signDoc in the format and level its body names, once', async () => {
    // The authorization names the hashes only; the login approves them in any format the service offers.
    const authorized = await authorize(ALICE, 'credential', { documents: 2 });
    const token = await tokenFor(ALICE, authorized);
    expect((token.body.authorization_details as Array<Record<string, unknown>>)[0]).not.toHaveProperty(
      'signature_format',
    );
    const headers = bearer(token.body.access_token as string);
    const entry = {
      hashes: signHashBody(authorized).hashes,
      hashAlgorithmOID: '2.16.840.1.101.3.4.2.1',
      signAlgo: '1.2.840.10045.4.3.2',
    };
    // The format is the client's to name at signDoc: without it, refused, the token still usable.
    const unnamed = await post(
      '/signatures/signDoc',
      { credentialID: 'onetime-ec-p256', documentDigests: [entry] },
      headers,
    );
    expect(unnamed).toEqual({
      status: 400,
      body: {
        error: 'invalid_request',
        error_description: 'signature_format and conformance_level are required',
      },
    });
    const signed = await post(
      '/signatures/signDoc',
      {
        credentialID: 'onetime-ec-p256',
        documentDigests: [{ ...entry, signature_format: 'C', conformance_level: 'AdES-B-T' }],
      },
      headers,
    );
    for (const cms of signedCms(signed, authorized.documents)) {
      // B-T: the signature carries the TSA's time-stamp token (id-aa-signatureTimeStampToken).
      expect(cms.includes(Buffer.from('060b2a864886f70d010910020e', 'hex'))).toBe(true);
    }
    // Used once: neither method signs with it again.
    const again = await post('/signatures/signHash', signHashBody(authorized), headers);
    expect(again.status).toBe(401);
  });

  it("time-stamps a client's hash with the service's TSA (signatures/timestamp), verified by openssl ts -verify", async () => {
    const authorized = await authorize(ALICE, 'service');
    const token = await tokenFor(ALICE, authorized);
    const headers = bearer(token.body.access_token as string);
    const data = randomBytes(100);
    const digest = createHash('sha256').update(data).digest();
    const nonce = randomBytes(8).toString('hex');
    const body = { hash: digest.toString('base64'), hashAlgorithmOID: '2.16.840.1.101.3.4.2.1', nonce };
    const stamped = await post('/signatures/timestamp', body, headers);
    expect(stamped.status).toBe(200);
    const tokenDer = Buffer.from(stamped.body.timestamp as string, 'base64');
    const files = {
      'token.der': tokenDer,
      'data.bin': data,
      'root.pem': rootPem(),
      'tsa.pem': readFileSync(join(LOCAL_DIR, 'ca', 'tsa.pem'), 'utf8'),
    };
    const verifyArgs = [
      'ts',
      '-verify',
      '-token_in',
      '-in',
      'token.der',
      '-CAfile',
      'root.pem',
      '-untrusted',
      'tsa.pem',
    ];
    expect(runOpenssl([...verifyArgs, '-data', 'data.bin'], files).stdout).toContain('Verification: OK');
    const text = runOpenssl(['ts', '-reply', '-token_in', '-in', 'token.der', '-text'], files).stdout;
    // openssl prints the nonce as an integer (leading zero octets dropped, an odd digit count padded).
    const printed = /Nonce: 0x([0-9a-f]+)/i.exec(text)?.[1];
    expect(printed && BigInt(`0x${printed}`)).toBe(BigInt(`0x${nonce}`));
    // Other data does not verify against it.
    const other = runOpenssl([...verifyArgs, '-data', 'data.bin'], {
      ...files,
      'data.bin': randomBytes(100),
    });
    expect(other.stdout).not.toContain('Verification: OK');
    // A hash of the wrong length, no token: refused.
    expect(
      (await post('/signatures/timestamp', { ...body, hash: randomBytes(20).toString('base64') }, headers))
        .body.error,
    ).toBe('invalid_request');
    expect((await post('/signatures/timestamp', body)).body.error).toBe('invalid_token');
  });

  it('takes a pushed authorization request (RFC 9126) once, for its own client only, and signs its hashes', async () => {
    const authorized = await authorize(ALICE, 'credential', { documents: 5, pushedBy: ALICE });
    const token = await tokenFor(ALICE, authorized);
    const signed = await post(
      '/signatures/signHash',
      signHashBody(authorized),
      bearer(token.body.access_token as string),
    );
    expect(signed.status).toBe(200);
    expect(signed.body.signatures).toHaveLength(5);

    // A request_uri is used once, and only by the client that pushed it.
    const params = {
      response_type: 'code',
      redirect_uri: REDIRECT,
      scope: 'service',
      code_challenge: createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url'),
      code_challenge_method: 'S256',
    };
    const pushed = await post('/oauth2/pushed_authorize', params, { authorization: basic(ALICE) }, true);
    const uri = pushed.body.request_uri as string;
    const open = (clientId: string) =>
      fetch(`${csc}/oauth2/authorize?client_id=${clientId}&request_uri=${encodeURIComponent(uri)}`, {
        redirect: 'manual',
      });
    const byMallory = await open(MALLORY.clientId);
    expect([byMallory.status, ((await byMallory.json()) as { error: string }).error]).toEqual([
      400,
      'invalid_request',
    ]);
    expect((await open(ALICE.clientId)).status).toBe(302);
    const again = await open(ALICE.clientId);
    expect([again.status, ((await again.json()) as { error: string }).error]).toEqual([
      400,
      'invalid_request',
    ]);

    // Pushing needs the client's secret; a bad request is answered at once, in JSON.
    expect(
      (
        await post(
          '/oauth2/pushed_authorize',
          params,
          { authorization: basic({ ...ALICE, secret: 'wrong' }) },
          true,
        )
      ).body.error,
    ).toBe('invalid_client');
    const noPkce = await post(
      '/oauth2/pushed_authorize',
      { ...params, code_challenge_method: 'plain' },
      { authorization: basic(ALICE) },
      true,
    );
    expect(noPkce).toEqual({
      status: 400,
      body: { error: 'invalid_request', error_description: 'code_challenge_method must be S256' },
    });
  });

  it('signs in operation mode A: a responseID, then signatures/signPolling for the token that asked', async () => {
    const authorized = await authorize(ALICE, 'credential', { documents: 2 });
    const token = await tokenFor(ALICE, authorized);
    const headers = bearer(token.body.access_token as string);
    const started = await post(
      '/signatures/signHash',
      { ...signHashBody(authorized), operationMode: 'A', validity_period: 60_000 },
      headers,
    );
    expect(started).toEqual({ status: 200, body: { responseID: expect.any(String) } });
    const responseID = started.body.responseID as string;
    // The token is used: it does not sign again.
    expect((await post('/signatures/signHash', signHashBody(authorized), headers)).body.error).toBe(
      'invalid_token',
    );
    // Another token, or another responseID: refused.
    const other = await tokenFor(ALICE, await authorize(ALICE, 'service'));
    expect(
      (await post('/signatures/signPolling', { responseID }, bearer(other.body.access_token as string))).body
        .error,
    ).toBe('invalid_request');
    expect((await post('/signatures/signPolling', { responseID: 'nothing' }, headers)).body.error).toBe(
      'invalid_request',
    );
    let polled: Answer | undefined;
    for (let i = 0; i < 60; i++) {
      polled = await post('/signatures/signPolling', { responseID }, headers);
      if (polled.status === 200) break;
      expect(polled.body).toEqual({
        error: 'invalid_request',
        error_description: 'the previous asynchronous signature request is not completed yet',
      });
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(polled!.status).toBe(200);
    const signatures = polled!.body.signatures as string[];
    const records = (await cscRecords()).filter((r) =>
      JSON.stringify(r.documents ?? '').includes(signHashBody(authorized).hashes[0]),
    );
    const certificate = new X509Certificate(records[0].certificate as string);
    authorized.documents.forEach((document, i) => {
      expect(verify('sha256', document, certificate.publicKey, Buffer.from(signatures[i], 'base64'))).toBe(
        true,
      );
    });
    // Polled again within the validity period: the same outcome.
    expect((await post('/signatures/signPolling', { responseID }, headers)).body).toEqual(polled!.body);
  });

  it('refuses an authorization without PKCE S256 back at the redirect URI, and an unknown client to the user agent', async () => {
    const url = new URL(`${csc}/oauth2/authorize`);
    for (const [k, v] of Object.entries({
      response_type: 'code',
      client_id: ALICE.clientId,
      redirect_uri: REDIRECT,
      scope: 'service',
      state: 's1',
    }))
      url.searchParams.set(k, v);
    const res = await fetch(url, { redirect: 'manual' });
    const back = new URL(res.headers.get('location')!);
    expect(back.searchParams.get('error')).toBe('invalid_request');
    expect(back.searchParams.get('state')).toBe('s1');
    url.searchParams.set('client_id', 'nobody');
    const unknown = await fetch(url, { redirect: 'manual' });
    expect(unknown.status).toBe(401);
    expect(await unknown.json()).toEqual({ error: 'invalid_client', error_description: 'unknown client_id' });
  });
});

describe('the CSC table is no use to an attacker who reads and writes it', () => {
  it('keeps no ID token in clear in CODE# or TOKEN#, and a TOKEN# written from a CODE# for an unregistered client signs nothing', async () => {
    const authorized = await authorize(ALICE, 'credential');
    const before = await issuedCertificates();
    // The attacker reads the code's item and writes an access token of their own from it for `attacker`.
    const attackerToken = randomBytes(32).toString('base64url');
    await withCscTable(async (doc, TableName) => {
      const { Item } = await doc.send(
        new GetCommand({ TableName, Key: { pk: `CODE#${sha256Hex(authorized.code)}` } }),
      );
      const stored = JSON.stringify(Item);
      expect(stored).not.toContain(CITIZEN.personalIdentityNumber);
      expect(stored).not.toMatch(/eyJ[A-Za-z0-9_-]+\.eyJ/);
      const grant = asAttacker(Item!.grant as string, (g) => {
        g.clientId = 'attacker';
        g.expiresAt = Math.floor(Date.now() / 1000) + 60;
      });
      await doc.send(
        new PutCommand({
          TableName,
          Item: {
            pk: `TOKEN#${sha256Hex(attackerToken)}`,
            clientId: 'attacker',
            grant,
            expiresAt: Math.floor(Date.now() / 1000) + 60,
          },
        }),
      );
    });
    const stolen = await post('/signatures/signHash', signHashBody(authorized), bearer(attackerToken));
    expect(stolen.status).toBe(401);
    expect(stolen.body.error).toBe('invalid_token');
    expect((await cscRecords()).filter((r) => r.clientId === 'csc:attacker')).toHaveLength(0);
    expect(await issuedCertificates()).toBe(before);

    // The real client still redeems its code and signs; its TOKEN# holds no ID token in clear either.
    const token = await tokenFor(ALICE, authorized);
    expect(token.status).toBe(200);
    const accessToken = token.body.access_token as string;
    const tokenItem = await withCscTable(async (doc, TableName) =>
      doc.send(new GetCommand({ TableName, Key: { pk: `TOKEN#${sha256Hex(accessToken)}` } })),
    );
    expect(JSON.stringify(tokenItem.Item)).not.toMatch(/eyJ[A-Za-z0-9_-]+\.eyJ/);
    const signed = await post('/signatures/signHash', signHashBody(authorized), bearer(accessToken));
    expect(signed.status).toBe(200);
  });

  it('sends the browser with a code only to a redirect URI registered for the client, whatever FLOW# says', async () => {
    const verifier = randomBytes(32).toString('base64url');
    const url = new URL(`${csc}/oauth2/authorize`);
    for (const [k, v] of Object.entries({
      response_type: 'code',
      client_id: ALICE.clientId,
      redirect_uri: REDIRECT,
      scope: 'service',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      state: 'flow-attack',
    }))
      url.searchParams.set(k, v);
    const started = await fetch(url, { redirect: 'manual' });
    const toIdp = new URL(started.headers.get('location')!);
    // The flow handle travels in the URL (the attacker may have started the flow): with it, the
    // attacker rewrites the flow to send the code elsewhere, sealing it anew as the service would.
    const state = toIdp.searchParams.get('state')!;
    await withCscTable(async (doc, TableName) => {
      for (const pk of [`FLOW#${state}`, `FLOW#${sha256Hex(state)}`]) {
        const { Item } = await doc.send(new GetCommand({ TableName, Key: { pk } }));
        if (!Item) continue;
        const flow = Item.flow as string;
        const sealed = flow.startsWith('v1.');
        const opened = (sealed ? unseal(state, pk, flow) : JSON.parse(flow)) as {
          request?: { redirectUri: string };
          params?: { redirect_uri: string };
        };
        if (opened.request) opened.request.redirectUri = 'http://evil.example/steal';
        if (opened.params) opened.params.redirect_uri = 'http://evil.example/steal';
        const rewritten = sealed ? seal(state, pk, opened) : JSON.stringify(opened);
        await doc.send(new PutCommand({ TableName, Item: { ...Item, flow: rewritten } }));
        return;
      }
      throw new Error('no FLOW# item for the state');
    });
    const atCallback = await loginAtLocalIdp(
      toIdp,
      process.env.CSC_IDP_REDIRECT_URI!,
      CITIZEN.personalIdentityNumber,
      'sign',
    );
    const back = await fetch(atCallback, { redirect: 'manual' });
    expect(back.headers.get('location') ?? '').not.toContain('evil.example');
    expect(back.status).toBe(400);
    expect(await back.json()).toEqual({
      error: 'invalid_request',
      error_description: 'redirect_uri is not registered for this client',
    });
  });

  it('answers a FLOW# edited without the state as an unknown authorization', async () => {
    const url = new URL(`${csc}/oauth2/authorize`);
    const verifier = randomBytes(32).toString('base64url');
    for (const [k, v] of Object.entries({
      response_type: 'code',
      client_id: ALICE.clientId,
      redirect_uri: REDIRECT,
      scope: 'service',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    }))
      url.searchParams.set(k, v);
    const toIdp = new URL((await fetch(url, { redirect: 'manual' })).headers.get('location')!);
    const state = toIdp.searchParams.get('state')!;
    await withCscTable(async (doc, TableName) => {
      const pk = `FLOW#${sha256Hex(state)}`;
      const { Item } = await doc.send(new GetCommand({ TableName, Key: { pk } }));
      expect(Item).toBeDefined();
      expect(JSON.stringify(Item)).not.toContain(ALICE.clientId);
      const flow = asAttacker(Item!.flow as string, () => undefined);
      await doc.send(new PutCommand({ TableName, Item: { ...Item, flow } }));
    });
    const atCallback = await loginAtLocalIdp(
      toIdp,
      process.env.CSC_IDP_REDIRECT_URI!,
      CITIZEN.personalIdentityNumber,
      'sign',
    );
    const back = await fetch(atCallback, { redirect: 'manual' });
    expect([back.status, await back.json()]).toEqual([
      400,
      { error: 'invalid_request', error_description: 'unknown, used or expired authorization (state)' },
    ]);
  });

  it("does not let a RESP# written to point at another request return that request's signature", async () => {
    const startA = async () => {
      const authorized = await authorize(ALICE, 'credential');
      const token = await tokenFor(ALICE, authorized);
      const headers = bearer(token.body.access_token as string);
      const started = await post(
        '/signatures/signHash',
        { ...signHashBody(authorized), operationMode: 'A' },
        headers,
      );
      expect(started.status).toBe(200);
      return { authorized, headers, responseID: started.body.responseID as string };
    };
    const [mine, theirs] = [await startA(), await startA()];
    const poll = async (p: { headers: Record<string, string>; responseID: string }) => {
      let polled: Answer | undefined;
      for (let i = 0; i < 60; i++) {
        polled = await post('/signatures/signPolling', { responseID: p.responseID }, p.headers);
        if (polled.status === 200) break;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      return polled!;
    };
    const theirSignature = (await poll(theirs)).body.signatures as string[];
    expect(theirSignature).toHaveLength(1);
    // The attacker points my RESP# at their request: the requestId edited, or their stored outcome copied.
    await withCscTable(async (doc, TableName) => {
      const get = async (responseID: string) =>
        (await doc.send(new GetCommand({ TableName, Key: { pk: `RESP#${sha256Hex(responseID)}` } }))).Item!;
      const [myItem, theirItem] = [await get(mine.responseID), await get(theirs.responseID)];
      const theirRequestId = (() => {
        try {
          return (JSON.parse(theirItem.response as string) as { requestId: string }).requestId;
        } catch {
          return undefined;
        }
      })();
      const response =
        theirRequestId === undefined
          ? theirItem.response
          : asAttacker(myItem.response as string, (r) => {
              r.requestId = theirRequestId;
            });
      await doc.send(new PutCommand({ TableName, Item: { ...myItem, response } }));
    });
    const redirected = await post('/signatures/signPolling', { responseID: mine.responseID }, mine.headers);
    expect(redirected.body.signatures).toBeUndefined();
    expect(redirected).toEqual({
      status: 400,
      body: {
        error: 'invalid_request',
        error_description: 'Invalid parameter responseID: unknown, expired or not of this access token',
      },
    });
    // Their outcome is still theirs.
    expect((await poll(theirs)).body.signatures).toEqual(theirSignature);
  });
});

describe('OAuth to the RFCs', () => {
  it('grants authorization_details in the token response, and requires redirect_uri at the token endpoint when authorize had it', async () => {
    const authorized = await authorize(ALICE, 'credential', { documents: 2 });
    const withoutRedirect = await post(
      '/oauth2/token',
      { grant_type: 'authorization_code', code: authorized.code, code_verifier: authorized.verifier },
      { authorization: basic(ALICE) },
      true,
    );
    expect(withoutRedirect).toEqual({
      status: 400,
      body: {
        error: 'invalid_grant',
        error_description: 'redirect_uri differs from the authorization request',
      },
    });
    const again = await authorize(ALICE, 'credential', { documents: 2 });
    const token = await tokenFor(ALICE, again);
    expect(token.status).toBe(200);
    expect(token.body.authorization_details).toEqual([
      {
        type: 'credential',
        credentialID: 'onetime-ec-p256',
        hashAlgorithmOID: '2.16.840.1.101.3.4.2.1',
        numSignatures: 2,
        documentDigests: again.hashes.map((h, i) => ({
          hash: Buffer.from(h, 'base64url').toString('base64'),
          label: `document-${i + 1}.pdf`,
        })),
      },
    ]);
  });

  it('answers every 401 of a resource method with a Bearer challenge naming the error (RFC 6750 3)', async () => {
    for (const [path, authorization] of [
      ['/signatures/signHash', 'Bearer not-a-token'],
      ['/signatures/signHash', undefined],
      ['/credentials/list', 'Bearer not-a-token'],
      ['/signatures/signPolling', 'Basic abc'],
    ] as const) {
      const res = await fetch(`${csc}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
        body: JSON.stringify({ responseID: 'x', credentialID: 'onetime-ec-p256' }),
      });
      expect(res.status).toBe(401);
      const body = (await res.json()) as { error: string; error_description: string };
      expect(body.error).toBe('invalid_token');
      expect(res.headers.get('www-authenticate')).toBe(
        `Bearer realm="csc", error="invalid_token", error_description="${body.error_description}"`,
      );
    }
  });
});

describe("the EU's rQES client (eudi-lib-jvm-rqes-csc-kt): our answers in its shapes, its requests accepted", () => {
  it('parses info, the service token, credentials/list and info, the credential token and signHash as the library does', async () => {
    const info = RsspMetadata.parse(await (await fetch(`${csc}/info`)).json());
    expect(authorizationServerOf(info)).toBe(csc);
    expect(info.methods).toEqual(
      expect.arrayContaining(['credentials/list', 'credentials/info', 'signatures/signHash']),
    );

    // The service authorization, then the credential and its certificate as the library asks for them.
    const serviceCode = await authorize(ALICE, 'service');
    const service = TokenResponse.parse((await tokenFor(ALICE, serviceCode)).body);
    const serviceHeaders = bearer(service.access_token);
    const list = await post('/credentials/list', credentialsListRequest(), serviceHeaders);
    expect(list.status).toBe(200);
    const listed = CredentialsList.parse(list.body);
    const credentialID = listed.credentialIDs[0];
    const infoAnswer = await post('/credentials/info', credentialsInfoRequest(credentialID), serviceHeaders);
    const credential = CredentialInfo.parse(infoAnswer.body);
    expect(credential.SCAL).toBe('2');
    const [leaf] = credential.cert.certificates!.map((b) => new X509Certificate(Buffer.from(b, 'base64')));
    expect(credential.cert.serialNumber).toBe(leaf.serialNumber.toLowerCase());

    // The credential authorization by authorization_details as the library builds them, the token request
    // with client_id and those details, then signHash as its SignHashRequestTO.
    const authorized = await authorize(ALICE, 'credential', {
      credentialID,
      details: (id, hashes) => authorizationDetails(id, hashes, '2.16.840.1.101.3.4.2.1'),
    });
    const answer = await post(
      '/oauth2/token',
      {
        grant_type: 'authorization_code',
        code: authorized.code,
        redirect_uri: REDIRECT,
        code_verifier: authorized.verifier,
        client_id: ALICE.clientId,
        authorization_details: JSON.stringify(
          authorizationDetails(
            credentialID,
            [Buffer.from(authorized.hash, 'base64url').toString('base64')],
            '2.16.840.1.101.3.4.2.1',
          ),
        ),
      },
      { authorization: basic(ALICE) },
      true,
    );
    const token = TokenResponse.parse(answer.body);
    expect(token.authorization_details?.[0]).toMatchObject({ credentialID, numSignatures: 1 });
    const signed = await post(
      '/signatures/signHash',
      signHashRequest(
        credentialID,
        [Buffer.from(authorized.hash, 'base64url').toString('base64')],
        '2.16.840.1.101.3.4.2.1',
        credential.key.algo.find((oid) => oid === '1.2.840.10045.4.3.2')!,
      ),
      bearer(token.access_token),
    );
    const [signature] = SignHashResponse.parse(signed.body).signatures;
    expect(verify('sha256', authorized.document, leaf.publicKey, Buffer.from(signature, 'base64'))).toBe(
      true,
    );
  });

  it('the contract catches what the library would reject', () => {
    // A check that could fail: without the keys the library requires, the shapes refuse.
    expect(
      RsspMetadata.safeParse({ authType: ['oauth2code'], methods: [], signAlgorithms: { algos: [] } })
        .success,
    ).toBe(false);
    expect(
      CredentialInfo.safeParse({
        key: { status: 'enabled', algo: [], len: 256 },
        cert: { status: 'valid', certificates: [] },
        auth: { mode: 'oauth2code' },
        multisign: 1,
      }).success,
    ).toBe(false);
  });
});

describe('abuse', () => {
  it('keeps only the known parameters of a pushed authorization request (80 unknown of 1,000 characters are dropped)', async () => {
    const verifier = randomBytes(32).toString('base64url');
    const params: Record<string, string> = {
      response_type: 'code',
      client_id: ALICE.clientId,
      redirect_uri: REDIRECT,
      scope: 'service',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    };
    for (let i = 0; i < 80; i++) params[`padding${i}`] = 'x'.repeat(1000);
    const pushed = await post('/oauth2/pushed_authorize', params, { authorization: basic(ALICE) }, true);
    expect(pushed.status).toBe(201);
    const item = await withCscTable(async (doc, TableName) =>
      doc.send(
        new GetCommand({
          TableName,
          Key: { pk: `PAR#${sha256Hex(pushed.body.request_uri as string)}` },
        }),
      ),
    );
    const stored = JSON.stringify(item.Item);
    expect(stored).not.toContain('padding');
    expect(stored.length).toBeLessThan(1000);
  });

  it('keeps a small FLOW# until the callback: the checked parameters, nothing derived from them', async () => {
    /** The stored FLOW# item's size for an authorization request that reaches the provider. */
    const flowItemSize = async (extra: Record<string, string>, hashCount: number) => {
      const hashes = Array.from({ length: hashCount }, () =>
        createHash('sha256').update(randomBytes(16)).digest('base64url'),
      );
      const url = new URL(`${csc}/oauth2/authorize`);
      for (const [k, v] of Object.entries({
        response_type: 'code',
        client_id: ALICE.clientId,
        redirect_uri: REDIRECT,
        scope: 'credential',
        code_challenge: createHash('sha256').update(randomBytes(32)).digest('base64url'),
        code_challenge_method: 'S256',
        credentialID: 'onetime-ec-p256',
        numSignatures: String(hashCount),
        hashes: hashes.join(','),
        hashAlgorithmOID: '2.16.840.1.101.3.4.2.1',
        ...extra,
      }))
        url.searchParams.set(k, v);
      const started = await fetch(url, { redirect: 'manual' });
      expect(started.status).toBe(302);
      const state = new URL(started.headers.get('location')!).searchParams.get('state')!;
      const { Item } = await withCscTable(async (doc, TableName) =>
        doc.send(new GetCommand({ TableName, Key: { pk: `FLOW#${sha256Hex(state)}` } })),
      );
      expect(Item).toBeDefined();
      return JSON.stringify(Item).length;
    };
    // One hash, a short state: 1,398 characters when the flow kept the parsed request (968 now).
    const typical = await flowItemSize({ state: randomBytes(16).toString('hex') }, 1);
    // The most an unauthenticated caller can send: 50 hashes, a long description, the longest state, a
    // signDoc format: 11,401 characters when the flow kept the parsed request (5,713 now), and 16 KB with
    // the 4,096-character state then accepted.
    const largest = await flowItemSize(
      {
        state: 's'.repeat(512),
        description: 'Signing the documents of case 12345. '.repeat(23).trim(),
        signature_format: 'P',
        conformance_level: 'Ades-B-LT',
      },
      50,
    );
    expect(typical).toBeLessThan(1100);
    expect(largest).toBeLessThan(6000);
    // A longer state is refused to the redirect URI, keeping nothing.
    const url = new URL(`${csc}/oauth2/authorize`);
    url.searchParams.set('client_id', ALICE.clientId);
    url.searchParams.set('redirect_uri', REDIRECT);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('state', 's'.repeat(513));
    const refused = new URL((await fetch(url, { redirect: 'manual' })).headers.get('location')!);
    expect(refused.searchParams.get('error')).toBe('invalid_request');
  });

  /** oauth2/authorize as anyone can call it: no client authentication, any client_id. */
  const authorizeAs = (clientId: string) =>
    fetch(`${csc}/oauth2/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId })}`, {
      redirect: 'manual',
    });
  const floodUntil429 = async (clientIdOf: (i: number) => string, max: number) => {
    for (let i = 0; i < max; i++) {
      const res = await authorizeAs(clientIdOf(i));
      if (res.status === 429) return { sent: i + 1, res, body: (await res.json()) as unknown };
      await res.arrayBuffer();
    }
    throw new Error(`no 429 after ${max} requests`);
  };

  it("limits each client's authorization requests, leaving other clients theirs", async () => {
    const flood = await floodUntil429(() => 'csc-flooded', PER_CLIENT * 2);
    expect(flood.sent).toBeGreaterThan(PER_CLIENT * 0.9);
    expect(flood.sent).toBeLessThanOrEqual(PER_CLIENT + 5);
    expect(flood.res.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
    expect(flood.body).toEqual({
      error: 'too_many_requests',
      error_description: 'too many requests for this client, retry later',
    });
    // Another client from the same source still gets its authorization.
    await authorize(ALICE, 'service');
  });

  it('limits the authorization requests of one source, whatever client_id it names', async () => {
    const flood = await floodUntil429((i) => `csc-made-up-${i}`, AUTHORIZE_PER_SOURCE * 2);
    expect(flood.sent).toBeLessThanOrEqual(AUTHORIZE_PER_SOURCE + 5);
    expect(flood.body).toEqual({
      error: 'too_many_requests',
      error_description: 'too many authorization requests from this source, retry later',
    });
    const real = await authorizeAs(ALICE.clientId);
    expect(real.status).toBe(429);
    // The other CSC methods stay open to that source.
    expect((await fetch(`${csc}/info`)).status).toBe(200);
  });
});
