/**
 * The local OpenID Provider end to end: a real oidc-provider in its own process, ID tokens obtained
 * through the authorization code flow with PKCE (openid-client and the scripted user agent), and each
 * token verified again here on its own with jose against the IdP's published keys.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  SignJWT,
  compactVerify,
  createRemoteJWKSet,
  decodeProtectedHeader,
  jwtVerify,
  type JWTPayload,
  type JWK,
} from 'jose';
import { signMessageHash } from '@pipeline/core/identity';
import {
  AuthorizationError,
  LocalIdpLoginError,
  PARAM_SIGN_REQUEST,
  SCOPE_SIGN,
  SignatureNotSupportedError,
  USER_SIGNATURE_CLAIM,
  beginLogin,
  documentsSignatureRequest,
  loginAtLocalIdp,
  obtainIdToken,
  type SignatureRequest,
} from '../../../client/src/oidc-login';
import { manifestHash, type SignMessage } from '../../../client/src/signing-client';
import { localClientKey } from '../../client-keys';
import { LOA2_CITIZEN_INDEX, TEST_CITIZENS, type TestCitizen } from '../citizens';
import { CLIENT_IDS, LOOPBACK_REDIRECT_URI } from '../clients';
import { IdpStartError, rotateIdpKeys, startIdpProcess, type IdpProcess } from '../process';
import { LOA, LOA_VALUES, SIGNING_SCOPE, SWEDISH_CLAIMS, SWEDISH_SCOPES } from '../profile';

jest.setTimeout(120_000);

const ID_TOKEN_TTL_SECONDS = 120;

let dir: string;
let keysFile: string;
let clientKeysDir: string;
let idp: IdpProcess;
let nonceCounter = 0;

const nonce = (): string => `nonce-${process.pid}-${++nonceCounter}-${Date.now()}`;

async function keysInFile(file: string): Promise<JWK[]> {
  return (JSON.parse(await readFile(file, 'utf8')) as { keys: JWK[] }).keys;
}

/** The kid the IdP signs with for a key type: the first key of that type in the file. */
async function signingKid(file: string, kty: 'RSA' | 'EC'): Promise<string> {
  return (await keysInFile(file)).find((k) => k.kty === kty)!.kid!;
}

/** Verifies the token with jose alone: the IdP's JWKS, issuer, audience, alg; returns the payload. */
async function verifyIndependently(
  idToken: string,
  issuer: string,
  jwksUri: string,
  audience: string,
  alg: 'RS256' | 'ES256',
): Promise<JWTPayload> {
  const { payload, protectedHeader } = await jwtVerify(idToken, createRemoteJWKSet(new URL(jwksUri)), {
    issuer,
    audience,
    algorithms: [alg],
  });
  expect(protectedHeader.alg).toBe(alg);
  return payload;
}

function expectCitizenClaims(payload: JWTPayload, citizen: TestCitizen, sentNonce: string): void {
  expect(payload.nonce).toBe(sentNonce);
  expect(payload.sub).toBe(citizen.sub);
  expect(payload.sub).not.toBe(citizen.personalIdentityNumber);
  expect(payload[SWEDISH_CLAIMS.givenName]).toBe(citizen.givenName);
  expect(payload[SWEDISH_CLAIMS.familyName]).toBe(citizen.familyName);
  expect(payload[SWEDISH_CLAIMS.name]).toBe(citizen.name);
  expect(payload[SWEDISH_CLAIMS.personalIdentityNumber]).toBe(citizen.personalIdentityNumber);
  expect(payload[SWEDISH_CLAIMS.personalIdentityNumber]).toMatch(/^\d{12}$/);
  const now = Math.floor(Date.now() / 1000);
  expect(typeof payload.auth_time).toBe('number');
  expect(payload.auth_time as number).toBeGreaterThanOrEqual(now - 60);
  expect(payload.auth_time as number).toBeLessThanOrEqual(now + 5);
  expect(payload.exp! - payload.iat!).toBe(ID_TOKEN_TTL_SECONDS);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'local-idp-'));
  // A directory that does not exist yet: the IdP creates it.
  keysFile = join(dir, 'idp', 'jwks.json');
  clientKeysDir = join(dir, 'client-keys');
  idp = await startIdpProcess({ keysFile, clientKeysDir, idTokenTtlSeconds: ID_TOKEN_TTL_SECONDS });
});

afterAll(async () => {
  await idp?.stop();
  await rm(dir, { recursive: true, force: true });
});

test('the keys file is made at first start: private, 0600, an RSA-2048 and an EC P-256 key with kids', async () => {
  expect((await stat(keysFile)).mode & 0o777).toBe(0o600);
  const keys = await keysInFile(keysFile);
  expect(keys.map((k) => k.kty).sort()).toEqual(['EC', 'RSA']);
  for (const key of keys) {
    expect(key.kid).toEqual(expect.any(String));
    expect(key.d).toEqual(expect.any(String));
  }
  expect(Buffer.from(keys.find((k) => k.kty === 'RSA')!.n!, 'base64url').length * 8).toBe(2048);
  expect(keys.find((k) => k.kty === 'EC')!.crv).toBe('P-256');
  // The published set has the same kids and no private parts.
  const published = (await (await fetch(idp.jwksUri)).json()) as { keys: JWK[] };
  expect(published.keys.map((k) => k.kid).sort()).toEqual(keys.map((k) => k.kid).sort());
  for (const key of published.keys) expect(key.d).toBeUndefined();
});

test('discovery: loopback issuer, code flow with PKCE S256, the Swedish scopes, claims and levels', async () => {
  expect(idp.issuer).toBe(`http://127.0.0.1:${idp.port}`);
  const metadata = (await (await fetch(`${idp.issuer}/.well-known/openid-configuration`)).json()) as Record<
    string,
    unknown
  >;
  expect(metadata.issuer).toBe(idp.issuer);
  expect(metadata.jwks_uri).toBe(idp.jwksUri);
  expect(metadata.response_types_supported).toEqual(['code']);
  expect(metadata.code_challenge_methods_supported).toEqual(['S256']);
  expect(metadata.scopes_supported).toEqual(
    expect.arrayContaining(['openid', SWEDISH_SCOPES.profile, SWEDISH_SCOPES.naturalPersonNumber]),
  );
  expect(metadata.claims_supported).toEqual(
    expect.arrayContaining([...Object.values(SWEDISH_CLAIMS), 'acr', 'auth_time']),
  );
  expect(metadata.acr_values_supported).toEqual(LOA_VALUES);
  expect(metadata.id_token_signing_alg_values_supported).toEqual(expect.arrayContaining(['RS256', 'ES256']));
  expect(metadata.claims_parameter_supported).toBe(true);
  // The signature extension (5.3): its scope, its claim, the sign message's MIME types.
  expect(metadata.scopes_supported).toEqual(expect.arrayContaining([SCOPE_SIGN]));
  expect(metadata.claims_supported).toEqual(expect.arrayContaining([USER_SIGNATURE_CLAIM]));
  expect(metadata['https://id.oidc.se/disco/userMessageSupportedMimeTypes']).toEqual([
    'text/plain',
    'text/markdown',
  ]);
  // Request Objects by value (extension 5.3), not by reference.
  expect(metadata.request_parameter_supported).toBe(true);
  expect(metadata.request_uri_parameter_supported).toBe(false);
  // A client's user message is shown at the login (OIDC.Sweden.Params 2.1, 3.1.1).
  expect(metadata['https://id.oidc.se/disco/userMessageSupported']).toBe(true);
});

test('ID tokens for each test citizen carry the identity claims, acr at the citizen level and auth_time', async () => {
  const rsaKid = await signingKid(keysFile, 'RSA');
  for (const citizen of TEST_CITIZENS) {
    const sent = nonce();
    const { idToken, claims } = await obtainIdToken({
      issuer: idp.issuer,
      clientId: CLIENT_IDS.signingService,
      personalIdentityNumber: citizen.personalIdentityNumber,
      nonce: sent,
    });
    const payload = await verifyIndependently(
      idToken,
      idp.issuer,
      idp.jwksUri,
      CLIENT_IDS.signingService,
      'RS256',
    );
    expect(decodeProtectedHeader(idToken).kid).toBe(rsaKid);
    expectCitizenClaims(payload, citizen, sent);
    expect(payload.acr).toBe(citizen.loa);
    // openid-client's validated claims are the same payload.
    expect(claims).toEqual(payload);
  }
});

test('the ES256 client gets ES256 ID tokens signed with the EC key', async () => {
  const citizen = TEST_CITIZENS[0];
  const sent = nonce();
  const { idToken } = await obtainIdToken({
    issuer: idp.issuer,
    clientId: CLIENT_IDS.signingServiceEs256,
    idTokenSignedResponseAlg: 'ES256',
    personalIdentityNumber: citizen.personalIdentityNumber,
    nonce: sent,
  });
  expect(decodeProtectedHeader(idToken).kid).toBe(await signingKid(keysFile, 'EC'));
  const payload = await verifyIndependently(
    idToken,
    idp.issuer,
    idp.jwksUri,
    CLIENT_IDS.signingServiceEs256,
    'ES256',
  );
  expectCitizenClaims(payload, citizen, sent);
  // The RP refuses an alg other than the one its client registered (RS256 by default).
  const refused = (await obtainIdToken({
    issuer: idp.issuer,
    clientId: CLIENT_IDS.signingServiceEs256,
    personalIdentityNumber: citizen.personalIdentityNumber,
    nonce: nonce(),
  }).catch((err: unknown) => err)) as Error;
  expect((refused.cause as Error | undefined)?.message).toMatch(/unexpected JWT "alg"/);
});

test("another client's ID token has its own audience and fails verification for the signing service", async () => {
  const { idToken } = await obtainIdToken({
    issuer: idp.issuer,
    clientId: CLIENT_IDS.otherService,
    personalIdentityNumber: TEST_CITIZENS[1].personalIdentityNumber,
    nonce: nonce(),
  });
  await verifyIndependently(idToken, idp.issuer, idp.jwksUri, CLIENT_IDS.otherService, 'RS256');
  await expect(
    verifyIndependently(idToken, idp.issuer, idp.jwksUri, CLIENT_IDS.signingService, 'RS256'),
  ).rejects.toMatchObject({ code: 'ERR_JWT_CLAIM_VALIDATION_FAILED', claim: 'aud' });
});

describe('acr', () => {
  const loa2Citizen = TEST_CITIZENS[LOA2_CITIZEN_INDEX];
  const loa4Citizen = TEST_CITIZENS.find((c) => c.loa === LOA.loa4)!;

  const acrOf = async (citizen: TestCitizen, options: { acrValues?: string[]; claims?: object }) => {
    const { claims } = await obtainIdToken({
      issuer: idp.issuer,
      clientId: CLIENT_IDS.signingService,
      personalIdentityNumber: citizen.personalIdentityNumber,
      nonce: nonce(),
      acrValues: options.acrValues,
      extraParameters: options.claims ? { claims: JSON.stringify(options.claims) } : undefined,
    });
    return claims.acr;
  };

  test('a citizen only at loa2 gets loa2, even when loa3 is asked for (acr_values are voluntary)', async () => {
    expect(loa2Citizen.loa).toBe(LOA.loa2);
    expect(await acrOf(loa2Citizen, {})).toBe(LOA.loa2);
    expect(await acrOf(loa2Citizen, { acrValues: [LOA.loa3] })).toBe(LOA.loa2);
  });

  test('a loa4 citizen gets the highest requested level the login meets', async () => {
    expect(await acrOf(loa4Citizen, {})).toBe(LOA.loa4);
    expect(await acrOf(loa4Citizen, { acrValues: [LOA.loa3] })).toBe(LOA.loa3);
    expect(await acrOf(loa4Citizen, { acrValues: [LOA.loa3, LOA.loa4] })).toBe(LOA.loa4);
  });

  test('an essential acr request (claims parameter) the citizen cannot meet ends the login with an error', async () => {
    const essential = (values: string[]) => ({ id_token: { acr: { essential: true, values } } });
    expect(await acrOf(loa2Citizen, { claims: essential([LOA.loa2, LOA.loa3]) })).toBe(LOA.loa2);
    await expect(acrOf(loa2Citizen, { claims: essential([LOA.loa3]) })).rejects.toMatchObject({
      code: 'unmet_authentication_requirements',
    });
  });
});

test('an unknown personal identity number cannot log in', async () => {
  await expect(
    obtainIdToken({
      issuer: idp.issuer,
      clientId: CLIENT_IDS.signingService,
      personalIdentityNumber: '190001010000',
      nonce: nonce(),
    }),
  ).rejects.toThrow(LocalIdpLoginError);
});

test('an authorization request without PKCE is refused', async () => {
  const url = new URL(`${idp.issuer}/auth`);
  url.search = new URLSearchParams({
    client_id: CLIENT_IDS.signingService,
    redirect_uri: LOOPBACK_REDIRECT_URI,
    response_type: 'code',
    scope: SIGNING_SCOPE,
    nonce: nonce(),
    state: 'some-state',
  }).toString();
  const response = await fetch(url, { redirect: 'manual' });
  await response.body?.cancel();
  const location = new URL(response.headers.get('location')!);
  expect(`${location.origin}${location.pathname}`).toBe(LOOPBACK_REDIRECT_URI);
  expect(location.searchParams.get('error')).toBe('invalid_request');
  expect(location.searchParams.get('error_description')).toMatch(/PKCE/);
});

test('rotation: the next start signs with new kids and still publishes the old keys', async () => {
  const oldRsaKid = await signingKid(keysFile, 'RSA');
  const oldEcKid = await signingKid(keysFile, 'EC');
  const { idToken: oldToken } = await obtainIdToken({
    issuer: idp.issuer,
    clientId: CLIENT_IDS.signingService,
    personalIdentityNumber: TEST_CITIZENS[2].personalIdentityNumber,
    nonce: nonce(),
  });

  const newKids = await rotateIdpKeys(keysFile);
  expect(newKids).toHaveLength(2);
  expect(newKids).not.toContain(oldRsaKid);
  expect(newKids).not.toContain(oldEcKid);
  expect((await stat(keysFile)).mode & 0o777).toBe(0o600);
  expect(await keysInFile(keysFile)).toHaveLength(4);

  const rotated = await startIdpProcess({ keysFile, idTokenTtlSeconds: ID_TOKEN_TTL_SECONDS });
  try {
    const { idToken } = await obtainIdToken({
      issuer: rotated.issuer,
      clientId: CLIENT_IDS.signingService,
      personalIdentityNumber: TEST_CITIZENS[2].personalIdentityNumber,
      nonce: nonce(),
    });
    const kid = decodeProtectedHeader(idToken).kid;
    expect(kid).toBe(await signingKid(keysFile, 'RSA'));
    expect(newKids).toContain(kid);
    await verifyIndependently(idToken, rotated.issuer, rotated.jwksUri, CLIENT_IDS.signingService, 'RS256');
    // A token signed before the rotation still verifies against the new process's published keys.
    await verifyIndependently(oldToken, idp.issuer, rotated.jwksUri, CLIENT_IDS.signingService, 'RS256');
  } finally {
    await rotated.stop();
  }
});

test('a broken keys file stops the IdP before it listens, with the reason', async () => {
  const broken = join(dir, 'broken.json');
  await writeFile(broken, 'not json', { mode: 0o600 });
  const failure = (await startIdpProcess({ keysFile: broken }).catch((err: unknown) => err)) as Error;
  expect(failure).toBeInstanceOf(IdpStartError);
  expect(failure.message).toMatch(/broken\.json is not JSON/);
});

describe('the signature extension: sign scope, signRequest, the approval in userSignature', () => {
  const MESSAGE: SignMessage = {
    text: '## Avtal\n\nJag godkänner **avtalet** om hyra.',
    mimeType: 'text/markdown',
  };
  const TBS = Buffer.alloc(32, 0xab).toString('base64');
  const citizen = TEST_CITIZENS[0];

  const signature = (overrides: Partial<SignatureRequest> = {}): SignatureRequest => ({
    key: localClientKey(CLIENT_IDS.signingService, clientKeysDir),
    tbsData: TBS,
    signMessage: MESSAGE,
    documentName: 'hyresavtal.pdf',
    ...overrides,
  });

  const signLogin = (options: Partial<Parameters<typeof obtainIdToken>[0]> = {}) =>
    obtainIdToken({
      issuer: idp.issuer,
      clientId: CLIENT_IDS.signingService,
      personalIdentityNumber: citizen.personalIdentityNumber,
      nonce: nonce(),
      signature: signature(),
      ...options,
    });

  /** The OAuth error the login ended with. */
  const oauthError = async (login: Promise<unknown>): Promise<string> => {
    const err = await login.then(
      () => undefined,
      (e: unknown) => e,
    );
    if (!(err instanceof AuthorizationError)) throw new Error(`expected an OAuth error, got ${String(err)}`);
    return err.code;
  };

  test('after the login and the citizen signing, the ID token carries the approval of exactly this message and data, signed by the issuer', async () => {
    const sent = nonce();
    const { idToken } = await signLogin({ nonce: sent });
    const payload = await verifyIndependently(
      idToken,
      idp.issuer,
      idp.jwksUri,
      CLIENT_IDS.signingService,
      'RS256',
    );
    expectCitizenClaims(payload, citizen, sent);
    const approvalJws = Buffer.from(payload[USER_SIGNATURE_CLAIM] as string, 'base64').toString('utf8');
    expect(decodeProtectedHeader(approvalJws)).toMatchObject({ typ: 'sign-approval+jwt', alg: 'RS256' });
    const { payload: bytes } = await compactVerify(approvalJws, createRemoteJWKSet(new URL(idp.jwksUri)));
    const approval = JSON.parse(Buffer.from(bytes).toString('utf8')) as Record<string, unknown>;
    expect(approval).toEqual({
      iss: idp.issuer,
      sub: citizen.sub,
      aud: CLIENT_IDS.signingService,
      iat: payload.auth_time,
      nonce: sent,
      tbs_data: TBS,
      sign_message_hash: signMessageHash({ text: MESSAGE.text, mimeType: 'text/markdown' }),
      // The document name shown beside the fingerprint is attested too.
      document_name: 'hyresavtal.pdf',
    });
    // auth_time is the moment of the signature (extension 3.2.1), within the service's login gap.
    expect(payload.iat! - (payload.auth_time as number)).toBeLessThanOrEqual(5);
  });

  test('the ES256 client gets an ES256 approval', async () => {
    const { claims } = await signLogin({
      clientId: CLIENT_IDS.signingServiceEs256,
      idTokenSignedResponseAlg: 'ES256',
      signature: signature({ key: localClientKey(CLIENT_IDS.signingServiceEs256, clientKeysDir) }),
    });
    const approvalJws = Buffer.from(claims[USER_SIGNATURE_CLAIM] as string, 'base64').toString('utf8');
    expect(decodeProtectedHeader(approvalJws).alg).toBe('ES256');
  });

  test('several documents: tbs_data the manifest hash, the composed message with its numbered list (up to 8000 characters) shown, the approval carrying both', async () => {
    // 50 documents with names of 120 characters under a text of 1000: the longest composed message.
    const documents = Array.from({ length: 50 }, (_, i) => ({
      name: `${String(i + 1).padStart(2, '0')} bilaga ${'ö'.repeat(100)}.pdf`.padEnd(120, 'x'),
      digest: Buffer.alloc(32, i).toString('base64'),
      digestAlgorithm: 'SHA-256' as const,
      format: 'cms' as const,
      profile: 'PAdES-B-B' as const,
    }));
    const request = documentsSignatureRequest(localClientKey(CLIENT_IDS.signingService, clientKeysDir), {
      documents,
      signMessage: { text: 'Jag ansöker om bygglov. '.repeat(42).slice(0, 1000) },
    });
    expect([...request.signMessage.text].length).toBeGreaterThan(7000);
    expect(request.tbsData).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const pages: string[] = [];
    const sent = nonce();
    const { claims } = await signLogin({
      nonce: sent,
      signature: request,
      onPage: (html) => pages.push(html),
    });
    const signPage = pages.find((html) => html.includes('id="approve"'))!;
    expect(signPage).toContain('Documents (listed below)');
    expect(signPage).toContain('SHA-256 of the list of documents');
    for (const [i, document] of documents.entries()) expect(signPage).toContain(`${i + 1}. ${document.name}`);
    const approvalJws = Buffer.from(claims[USER_SIGNATURE_CLAIM] as string, 'base64').toString('utf8');
    const { payload: bytes } = await compactVerify(approvalJws, createRemoteJWKSet(new URL(idp.jwksUri)));
    expect(JSON.parse(Buffer.from(bytes).toString('utf8'))).toMatchObject({
      nonce: sent,
      tbs_data: manifestHash(documents),
      sign_message_hash: signMessageHash({ text: request.signMessage.text, mimeType: 'text/plain' }),
    });
    // One character more than a composed message may have, or a single document's message over 1000
    // with a digest: still refused.
    const tooLong = {
      text: `${request.signMessage.text}${'x'.repeat(8001 - [...request.signMessage.text].length)}`,
    };
    expect(await oauthError(signLogin({ signature: { ...request, signMessage: tooLong } }))).toBe(
      'invalid_request',
    );
    const overOneDocument = { text: request.signMessage.text.slice(0, 1001) };
    expect(await oauthError(signLogin({ signature: signature({ signMessage: overOneDocument }) }))).toBe(
      'invalid_request',
    );
  });

  test('a plain login carries no approval, and a signature is never remembered for the next login', async () => {
    const { claims } = await obtainIdToken({
      issuer: idp.issuer,
      clientId: CLIENT_IDS.signingService,
      personalIdentityNumber: citizen.personalIdentityNumber,
      nonce: nonce(),
    });
    expect(claims[USER_SIGNATURE_CLAIM]).toBeUndefined();
  });

  test('the citizen cancels on the signature page: access_denied, no token', async () => {
    expect(await oauthError(signLogin({ decision: 'cancel' }))).toBe('access_denied');
  });

  test.each<[string, () => Partial<Parameters<typeof obtainIdToken>[0]>, string]>([
    [
      'without the signRequest parameter',
      () => ({ signature: undefined, scope: `openid profile ${SCOPE_SIGN}` }),
      'invalid_request',
    ],
    ['without prompt consent', () => ({ prompt: 'login' }), 'invalid_request'],
    [
      'with a signRequest signed by a key the client did not register',
      () => ({ signature: signature({ key: localClientKey('stranger', clientKeysDir) }) }),
      'invalid_request',
    ],
    [
      'with a sign message that cannot be displayed (a bidirectional override)',
      () => ({ signature: signature({ signMessage: { text: 'betala \u202e001 kr' } }) }),
      'invalid_request',
    ],
    ...(
      [
        ['a left-to-right mark', 'betala \u200e100 kr'],
        ['a right-to-left mark', 'betala 100\u200f kr'],
        ['an Arabic letter mark', 'betala \u061c100 kr'],
        ['a zero-width space', 'betala 1\u200b00 kr'],
        ['a zero-width joiner', 'betala 1\u200d00 kr'],
        ['a word joiner', 'betala\u2060100 kr'],
        ['an invisible times', 'betala 10\u20620 kr'],
        ['a byte order mark', '\ufeffbetala 100 kr'],
        ['a soft hyphen', 'be\u00adtala 100 kr'],
        ['tag characters', 'betala 100 kr\u{e0031}\u{e0030}'],
        ['a Hangul filler', 'betala 100 kr\u3164'],
        ['only invisible characters', '\u3164\u200b\ufeff'],
      ] as const
    ).map(([what, text]): [string, () => Partial<Parameters<typeof obtainIdToken>[0]>, string] => [
      `with a sign message with ${what}`,
      () => ({ signature: signature({ signMessage: { text } }) }),
      'invalid_request',
    ]),
    [
      'with a document name with a right-to-left mark',
      () => ({ signature: signature({ documentName: 'faktura\u200f.pdf' }) }),
      'invalid_request',
    ],
    [
      'with a document name of invisible characters only',
      () => ({ signature: signature({ documentName: '\u200b\u3164' }) }),
      'invalid_request',
    ],
    [
      'from a client that may not ask for signatures',
      () => ({
        clientId: CLIENT_IDS.otherService,
        signature: signature({ key: localClientKey(CLIENT_IDS.otherService, clientKeysDir) }),
      }),
      'unauthorized_client',
    ],
  ])('a signature request %s is refused before anyone logs in', async (_what, options, code) => {
    expect(await oauthError(signLogin(options()))).toBe(code);
  });

  describe('the signRequest JWT (extension 3.1.2 and 5.1, v1.2): iss, aud, iat, exp', () => {
    const SV = 'Jag godkänner hyresavtalet.';
    const EN = 'I approve the lease.';
    const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');

    /** A signRequest JWT signed with the signing service's registered key, with these claims. */
    const rawSignRequest = async (
      claims: Record<string, unknown>,
      options: { omit?: readonly string[] } = {},
    ): Promise<string> => {
      const now = Math.floor(Date.now() / 1000);
      const all: Record<string, unknown> = {
        iss: CLIENT_IDS.signingService,
        aud: idp.issuer,
        iat: now,
        exp: now + 300,
        tbs_data: TBS,
        sign_message: { message: b64(SV), mime_type: 'text/plain' },
        ...claims,
      };
      for (const name of options.omit ?? []) delete all[name];
      return new SignJWT(all)
        .setProtectedHeader({ alg: 'ES256' })
        .sign(localClientKey(CLIENT_IDS.signingService, clientKeysDir).privateKey);
    };

    /** A login whose signRequest parameter is `jwt`, as the signing service with the sign scope. */
    const loginWith = (jwt: string, options: Partial<Parameters<typeof obtainIdToken>[0]> = {}) =>
      signLogin({
        signature: undefined,
        scope: `openid profile ${SCOPE_SIGN}`,
        ...options,
        extraParameters: { ...options.extraParameters, [PARAM_SIGN_REQUEST]: jwt },
      });

    /** The OAuth error and its description the login ended with. */
    const refusal = async (login: Promise<unknown>): Promise<{ code: string; description: string }> => {
      const err = await login.then(
        () => undefined,
        (e: unknown) => e,
      );
      if (!(err instanceof AuthorizationError))
        throw new Error(`expected an OAuth error, got ${String(err)}`);
      return { code: err.code, description: err.message };
    };

    /** The approval the ID token carries, verified with the IdP's keys. */
    const approvalOf = async (claims: Record<string, unknown>): Promise<Record<string, unknown>> => {
      const jws = Buffer.from(claims[USER_SIGNATURE_CLAIM] as string, 'base64').toString('utf8');
      const { payload } = await compactVerify(jws, createRemoteJWKSet(new URL(idp.jwksUri)));
      return JSON.parse(Buffer.from(payload).toString('utf8')) as Record<string, unknown>;
    };

    const now = (): number => Math.floor(Date.now() / 1000);

    test.each<[string, () => Promise<string>, RegExp]>([
      [
        'one second after its exp',
        () => rawSignRequest({ iat: now() - 120, exp: now() - 1 }),
        /expired \(exp\)/,
      ],
      ['at its exp', () => rawSignRequest({ iat: now() - 120, exp: now() }), /expired \(exp\)/],
      ['for another audience', () => rawSignRequest({ aud: 'https://other-idp.example' }), /aud/],
      [
        "for another provider's authorization endpoint",
        () => rawSignRequest({ aud: 'https://other-idp.example/auth' }),
        /aud/,
      ],
      ['without aud', () => rawSignRequest({}, { omit: ['aud'] }), /aud/],
      ['without iss', () => rawSignRequest({}, { omit: ['iss'] }), /iss/],
      [
        'from an iss other than the client (signed with its key)',
        () => rawSignRequest({ iss: CLIENT_IDS.otherService }),
        /iss/,
      ],
      ['without exp', () => rawSignRequest({}, { omit: ['exp'] }), /iat and exp/],
      ['without iat', () => rawSignRequest({}, { omit: ['iat'] }), /iat and exp/],
      ['issued in the future', () => rawSignRequest({ iat: now() + 600, exp: now() + 700 }), /not yet valid/],
      [
        'with a sign message of a MIME type the provider does not display (text/html)',
        () => rawSignRequest({ sign_message: { message: b64('<b>x</b>'), mime_type: 'text/html' } }),
        /cannot be displayed/,
      ],
      [
        'living longer than ten minutes',
        () => rawSignRequest({ iat: now(), exp: now() + 3600 }),
        /lives longer/,
      ],
    ])('a signRequest %s is refused: invalid_request with a description', async (_what, jwt, description) => {
      const { code, description: said } = await refusal(loginWith(await jwt()));
      expect(code).toBe('invalid_request');
      expect(said).toMatch(description);
    });

    test('a signRequest naming the authorization endpoint as its audience is accepted (extension 5.1)', async () => {
      const { claims } = await loginWith(await rawSignRequest({ aud: `${idp.issuer}/auth` }));
      expect((await approvalOf(claims)).tbs_data).toBe(TBS);
    });

    const PAIR = { 'message#sv': b64(SV), 'message#en': b64(EN), mime_type: 'text/plain' };

    test.each<[string, Partial<Parameters<typeof obtainIdToken>[0]>, string, string]>([
      ['Accept-Language en-GB', { acceptLanguage: 'en-GB,en;q=0.9,sv;q=0.5' }, 'en', EN],
      ['Accept-Language sv-SE', { acceptLanguage: 'sv-SE,sv;q=0.9,en;q=0.8' }, 'sv', SV],
      ['Accept-Language by q', { acceptLanguage: 'sv;q=0.4, en;q=0.8, fr' }, 'en', EN],
      [
        'ui_locales before Accept-Language',
        { acceptLanguage: 'sv', extraParameters: { ui_locales: 'en' } },
        'en',
        EN,
      ],
    ])(
      'a message#sv/message#en pair: %s shows that one, and the approval attests exactly that text',
      async (_what, browser, lang, text) => {
        const pages: string[] = [];
        const { claims } = await loginWith(await rawSignRequest({ sign_message: PAIR }), {
          ...browser,
          onPage: (html) => pages.push(html),
        });
        const signPage = pages.find((html) => html.includes('id="sign-message"'));
        expect(signPage).toBeDefined();
        const shown = /<div id="sign-message" lang="([^"]*)">([\s\S]*?)<\/div>/.exec(signPage!);
        expect(shown?.[1]).toBe(lang);
        expect(shown?.[2]).toContain(text);
        expect(shown?.[2]).not.toContain(lang === 'en' ? SV : EN);
        const approval = await approvalOf(claims);
        expect(approval.sign_message_hash).toBe(signMessageHash({ text, mimeType: 'text/plain' }));
        expect(approval.sign_message_lang).toBe(lang);
      },
    );

    test('no language asked for matches: the message without a tag is shown (OIDC.Sweden.Params 2.1)', async () => {
      const plain = 'Jag godkänner (utan språk).';
      const { claims } = await loginWith(
        await rawSignRequest({ sign_message: { ...PAIR, message: b64(plain) } }),
        { acceptLanguage: 'fr-FR,de;q=0.5' },
      );
      const approval = await approvalOf(claims);
      expect(approval.sign_message_hash).toBe(signMessageHash({ text: plain, mimeType: 'text/plain' }));
      expect(approval.sign_message_lang).toBeUndefined();
    });

    test('a pair whose other language cannot be displayed is refused, whichever would be shown', async () => {
      const jwt = await rawSignRequest({
        sign_message: {
          'message#sv': b64(SV),
          'message#en': b64('pay \u202e001 kr'),
          mime_type: 'text/plain',
        },
      });
      const { code, description } = await refusal(loginWith(jwt, { acceptLanguage: 'sv' }));
      expect(code).toBe('invalid_request');
      expect(description).toMatch(/cannot be displayed/);
    });

    test('the signRequest in a signed Request Object (extension 3.1.1.2): shown and approved as the parameter is', async () => {
      const pages: string[] = [];
      const { claims } = await signLogin({
        signature: signature({ signMessage: { text: EN }, language: 'en' }),
        signRequestPlacement: 'request-object',
        onPage: (html) => pages.push(html),
      });
      const approval = await approvalOf(claims);
      expect(approval.tbs_data).toBe(TBS);
      expect(approval.sign_message_hash).toBe(signMessageHash({ text: EN, mimeType: 'text/plain' }));
      expect(approval.document_name).toBe('hyresavtal.pdf');
      expect(pages.some((html) => html.includes(EN))).toBe(true);
    });

    /**
     * Where the local IdP sends the browser for an authorization request whose Request Object has these
     * claims (signed with the signing service's key): the OAuth error it ends with, from the redirect or
     * the error page.
     */
    const requestObjectRefusal = async (
      claims: Record<string, unknown>,
      omit: readonly string[] = [],
      browser: Partial<Parameters<typeof obtainIdToken>[0]> = {},
    ): Promise<string> => {
      const t = now();
      const all: Record<string, unknown> = {
        iss: CLIENT_IDS.signingService,
        aud: idp.issuer,
        iat: t,
        exp: t + 300,
        client_id: CLIENT_IDS.signingService,
        response_type: 'code',
        redirect_uri: LOOPBACK_REDIRECT_URI,
        scope: `openid ${SCOPE_SIGN}`,
        prompt: 'login consent',
        nonce: nonce(),
        state: 'state-1',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
        [PARAM_SIGN_REQUEST]: { tbs_data: TBS, sign_message: { message: b64(SV) } },
        ...claims,
      };
      for (const name of omit) delete all[name];
      const jwt = await new SignJWT(all)
        .setProtectedHeader({ alg: 'ES256' })
        .sign(localClientKey(CLIENT_IDS.signingService, clientKeysDir).privateKey);
      const url = new URL(`${idp.issuer}/auth`);
      url.search = new URLSearchParams({
        client_id: CLIENT_IDS.signingService,
        response_type: 'code',
        scope: `openid ${SCOPE_SIGN}`,
        request: jwt,
      }).toString();
      const callback = await loginAtLocalIdp(
        url,
        LOOPBACK_REDIRECT_URI,
        citizen.personalIdentityNumber,
        'sign',
        browser,
      ).catch((err: Error) => err);
      if (callback instanceof Error) return callback.message;
      return `${callback.searchParams.get('error')}: ${callback.searchParams.get('error_description')}`;
    };

    test.each<[string, Record<string, unknown> | (() => Record<string, unknown>), readonly string[], RegExp]>(
      [
        ['well formed (the control)', {}, [], /^null: null$/],
        ['without exp', {}, ['exp'], /^invalid_request: .*needs iat and exp/],
        // Within oidc-provider's clock tolerance: this provider's own rule (no leeway) refuses it.
        [
          'one second after its exp',
          () => ({ iat: now() - 120, exp: now() - 1 }),
          [],
          /^invalid_request: .*has expired \(exp\)/,
        ],
        // oidc-provider's own checks of a Request Object's exp, iss and aud answer RFC 9101's code.
        [
          'ten minutes after its exp',
          () => ({ iat: now() - 900, exp: now() - 600 }),
          [],
          /^invalid_request_object: Request Object claims are invalid/,
        ],
        [
          'for another audience',
          { aud: 'https://other-idp.example' },
          [],
          /^invalid_request_object: Request Object claims are invalid/,
        ],
        [
          'with a sign message that cannot be displayed',
          { [PARAM_SIGN_REQUEST]: { tbs_data: TBS, sign_message: { message: b64('betala \u202e001') } } },
          [],
          /invalid_request: .*cannot be displayed/,
        ],
        [
          'with the signRequest as a string',
          { [PARAM_SIGN_REQUEST]: 'eyJ0.e30.x' },
          [],
          /invalid_request: .*JSON object/,
        ],
      ],
    )('a Request Object holding a signRequest %s', async (_what, claims, omit, expected) => {
      expect(await requestObjectRefusal(typeof claims === 'function' ? claims() : claims, omit)).toMatch(
        expected,
      );
    });

    describe('a client provided user message at the login (OIDC.Sweden.Params 2.1)', () => {
      const USER_MESSAGE = JSON.stringify({
        'message#sv': b64('Logga in för att se ditt avtal.'),
        'message#en': b64('Log in to see your contract.'),
        mime_type: 'text/plain',
      });
      const shownOn = (pages: readonly string[]) =>
        pages
          .map((html) => /<div id="user-message" lang="([^"]*)">([\s\S]*?)<\/div>/.exec(html))
          .find((m) => m !== null);

      test.each([
        ['en-GB,en;q=0.9', 'en', 'Log in to see your contract.'],
        ['sv-SE', 'sv', 'Logga in för att se ditt avtal.'],
      ])('Accept-Language %s: the login page shows the %s message', async (acceptLanguage, lang, text) => {
        const pages: string[] = [];
        await obtainIdToken({
          issuer: idp.issuer,
          clientId: CLIENT_IDS.signingService,
          personalIdentityNumber: citizen.personalIdentityNumber,
          nonce: nonce(),
          extraParameters: { 'https://id.oidc.se/param/userMessage': USER_MESSAGE },
          acceptLanguage,
          onPage: (html) => pages.push(html),
        });
        const shown = shownOn(pages);
        expect(shown?.[1]).toBe(lang);
        expect(shown?.[2]).toContain(text);
      });

      test('in a Request Object, as a JSON object, it is shown too', async () => {
        const pages: string[] = [];
        expect(
          await requestObjectRefusal(
            { 'https://id.oidc.se/param/userMessage': JSON.parse(USER_MESSAGE) as unknown },
            [],
            { acceptLanguage: 'en', onPage: (html) => pages.push(html) },
          ),
        ).toBe('null: null');
        expect(shownOn(pages)?.[2]).toContain('Log in to see your contract.');
      });

      test.each([
        ['with a bidirectional override', JSON.stringify({ message: b64('logga \u202ein') })],
        [
          'of a MIME type it does not display',
          JSON.stringify({ message: b64('<b>x</b>'), mime_type: 'text/html' }),
        ],
        ['that is not JSON', 'message=hej'],
      ])('a user message %s is refused: invalid_request', async (_what, value) => {
        const { code, description } = await refusal(
          obtainIdToken({
            issuer: idp.issuer,
            clientId: CLIENT_IDS.signingService,
            personalIdentityNumber: citizen.personalIdentityNumber,
            nonce: nonce(),
            extraParameters: { 'https://id.oidc.se/param/userMessage': value },
          }),
        );
        expect([code, description]).toEqual(['invalid_request', expect.stringMatching(/user ?[mM]essage/)]);
      });
    });

    test('a reference to a Request Object’s signRequest sent as a plain parameter is refused', async () => {
      const { description, code } = await refusal(
        loginWith('request-object:00000000-0000-4000-8000-000000000000'),
      );
      expect([code, description]).toEqual(['invalid_request', expect.stringMatching(/signed JWT|not a JWT/)]);
    });

    test('the client offering one language sends message#<lang>; the approval attests its text and language', async () => {
      const { claims } = await signLogin({
        signature: signature({ signMessage: { text: EN }, language: 'en' }),
        acceptLanguage: 'sv',
      });
      const approval = await approvalOf(claims);
      expect(approval.sign_message_hash).toBe(signMessageHash({ text: EN, mimeType: 'text/plain' }));
      expect(approval.sign_message_lang).toBe('en');
    });
  });

  describe('the client checks the provider’s discovery document first (extension 4.1)', () => {
    /** Providers by path: `/<name>` is an issuer whose discovery document has these fields. */
    const providers = new Map<string, Record<string, unknown>>();
    let server: Server;
    let origin: string;

    beforeAll(async () => {
      server = createServer((req, res) => {
        const name = /^\/([a-z-]+)\/\.well-known\/openid-configuration$/.exec(req.url ?? '')?.[1];
        const fields = name === undefined ? undefined : providers.get(name);
        if (fields === undefined) return res.writeHead(404).end();
        const issuer = `${origin}/${name}`;
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            issuer,
            authorization_endpoint: `${issuer}/auth`,
            token_endpoint: `${issuer}/token`,
            jwks_uri: `${issuer}/jwks`,
            response_types_supported: ['code'],
            ...fields,
          }),
        );
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    const begin = (name: string, message: SignMessage) =>
      beginLogin({
        issuer: `${origin}/${name}`,
        clientId: CLIENT_IDS.signingService,
        nonce: nonce(),
        signature: signature({ signMessage: message }),
      });

    test('a provider without the sign scope in scopes_supported gets no signature request', async () => {
      providers.set('no-sign', { scopes_supported: ['openid', 'profile'] });
      await expect(begin('no-sign', { text: 'Jag godkänner.' })).rejects.toThrow(SignatureNotSupportedError);
    });

    test('a Markdown message goes only to a provider that lists text/markdown (text/plain when it lists none)', async () => {
      providers.set('plain-only', { scopes_supported: ['openid', SCOPE_SIGN] });
      await expect(begin('plain-only', MESSAGE)).rejects.toThrow(/text\/markdown/);
      const pending = await begin('plain-only', { text: 'Jag godkänner.' });
      expect(pending.authorizationUrl.searchParams.get(PARAM_SIGN_REQUEST)).toEqual(expect.any(String));
      // Against the local provider, which lists text/markdown, the same Markdown message is sent.
      const local = await beginLogin({
        issuer: idp.issuer,
        clientId: CLIENT_IDS.signingService,
        nonce: nonce(),
        signature: signature(),
      });
      expect(local.authorizationUrl.searchParams.get(PARAM_SIGN_REQUEST)).toEqual(expect.any(String));
    });

    test('a MIME type no provider displays is not sent', async () => {
      await expect(
        beginLogin({
          issuer: idp.issuer,
          clientId: CLIENT_IDS.signingService,
          nonce: nonce(),
          signature: signature({ signMessage: { text: '<b>x</b>', mimeType: 'text/html' as 'text/plain' } }),
        }),
      ).rejects.toThrow(SignatureNotSupportedError);
    });
  });

  test('a signRequest without the sign scope is refused', async () => {
    const jwt = await new SignJWT({ tbs_data: TBS, sign_message: { message: 'SGVq' } })
      .setProtectedHeader({ alg: 'ES256' })
      .setIssuer(CLIENT_IDS.signingService)
      .setAudience(idp.issuer)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(localClientKey(CLIENT_IDS.signingService, clientKeysDir).privateKey);
    expect(
      await oauthError(
        obtainIdToken({
          issuer: idp.issuer,
          clientId: CLIENT_IDS.signingService,
          personalIdentityNumber: citizen.personalIdentityNumber,
          nonce: nonce(),
          extraParameters: { [PARAM_SIGN_REQUEST]: jwt },
        }),
      ),
    ).toBe('invalid_request');
  });

  test('a request naming its signer (essential personal identity number) refuses anyone else before showing the message', async () => {
    const names = (number: string) => ({
      claims: JSON.stringify({
        id_token: { [SWEDISH_CLAIMS.personalIdentityNumber]: { essential: true, value: number } },
      }),
    });
    await signLogin({ extraParameters: names(citizen.personalIdentityNumber) });
    expect(
      await oauthError(signLogin({ extraParameters: names(TEST_CITIZENS[1].personalIdentityNumber) })),
    ).toBe('access_denied');
  });
});
