/**
 * Our CSC answers and request parsing held to eudi-lib-jvm-rqes-csc-kt 0.8.0 (eudi-contract/rqes-0.8.0.ts,
 * transcribed from its source): `info` through the door's real routing (GET and POST); the library's
 * credential authorization as it builds it, by query parameters (then its token request through the
 * door, the answer with authorization_details read as it reads it) and by authorization_details. Where the
 * service departs from that release (CSC v2.2.0.0 members a v2.0.0.2 service does not have), the
 * departure is listed exactly in KNOWN_DIVERGENCES, so a new one, or one fixed, fails the test.
 */
import { createHash } from 'node:crypto';
import {
  grantOf,
  parseAuthorizationRequest,
  type CscClient,
  type CscCode,
  type CscStore,
} from '@pipeline/core/csc';
import type { HttpEvent } from '@pipeline/doors';
import { handleCscEvent, type CscDoorDeps } from '../src';
import {
  RsspMetadata,
  TokenResponse,
  authorizationByDetails,
  authorizationByScope,
  authorizationServerOf,
  type AuthorizationClient,
  type CredentialAuthorizationSubject,
} from './eudi-contract/rqes-0.8.0';

const OAUTH2 = 'https://csc.example.invalid/csc/v2';

/** Where our `info` departs from RSSPMetadataTO of 0.8.0: its path and zod's issue code. */
const KNOWN_DIVERGENCES = [
  // CSC v2.2.0.0's supportedHashTypes, @Required by 0.8.0: the library cannot read our info.
  { path: 'supportedHashTypes', code: 'invalid_type' },
];

/** A port `info`, the authorization parsing and oauth2/token never reach. */
const unused = <T extends object>(name: string): T =>
  new Proxy({} as T, {
    get: () => () => {
      throw new Error(`${name} is not used here`);
    },
  });

const SECRET = 'wallet-secret';
const client: CscClient = {
  clientId: 'wallet',
  name: 'EUDI Wallet',
  secretHash: createHash('sha256').update(SECRET).digest('hex'),
  redirectUris: ['https://wallet.example.invalid/cb'],
};

/** The door's state, holding one authorization code (oauth2/token redeems it, stores the token). */
const codes = new Map<string, CscCode>();
const store = new Proxy({} as CscStore, {
  get: (_target, method) => {
    if (method === 'redeemCode') {
      return (code: string, clientId: string) => {
        const grant = codes.get(code);
        codes.delete(code);
        return Promise.resolve(grant && grant.clientId !== clientId ? 'other-client' : grant);
      };
    }
    if (method === 'putToken') return () => Promise.resolve();
    return () => {
      throw new Error(`store.${String(method)} is not used here`);
    };
  },
});

const deps: CscDoorDeps = {
  config: {
    service: {
      name: 'Signing service',
      logo: `${OAUTH2}/logo.png`,
      region: 'SE',
      lang: 'sv-SE',
      description: 'One-time keys',
      oauth2: OAUTH2,
    },
    clients: [client],
    lifetimes: { flowSeconds: 600, codeSeconds: 60, accessTokenSeconds: 120 },
    signWaitSeconds: 1,
  },
  store,
  verifier: unused<CscDoorDeps['verifier']>('verifier'),
  login: unused<CscDoorDeps['login']>('login'),
  intake: unused<CscDoorDeps['intake']>('intake'),
  timeStamper: unused<CscDoorDeps['timeStamper']>('timeStamper'),
  logger: { warn: () => undefined, error: () => undefined },
};

const event = (
  httpMethod: 'GET' | 'POST',
  method = 'info',
  body: string | null = httpMethod === 'POST' ? '{}' : null,
  headers: Record<string, string> = httpMethod === 'POST' ? { 'content-type': 'application/json' } : {},
): HttpEvent =>
  ({
    httpMethod,
    resource: `/csc/v2/${method}`,
    path: `/csc/v2/${method}`,
    headers,
    multiValueHeaders: {},
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: null,
    stageVariables: null,
    body,
    isBase64Encoded: false,
    requestContext: {},
  }) as unknown as HttpEvent;

/** How 0.8.0's RSSPMetadataTO reads an info answer: the issues, by path and code. */
const issuesOf = (info: unknown) =>
  (RsspMetadata.safeParse(info).error?.issues ?? []).map((i) => ({
    path: i.path.join('.'),
    code: i.code,
  }));

describe('info, as eudi-lib-jvm-rqes-csc-kt 0.8.0 reads it', () => {
  it.each(['GET', 'POST'] as const)('%s info: only the known divergences', async (method) => {
    const res = await handleCscEvent(event(method), deps);
    expect(res.statusCode).toBe(200);
    const info = JSON.parse(res.body) as Record<string, unknown>;
    expect(issuesOf(info)).toEqual(KNOWN_DIVERGENCES);

    // With the divergent members as the library needs them, it reads the rest: its authorization
    // server, without RAR (so its credential authorizations come as query parameters).
    const read = RsspMetadata.parse({ ...info, supportedHashTypes: ['DTBSR'] });
    expect(authorizationServerOf(read)).toEqual({ url: OAUTH2, supportsRar: false });
    expect(read.methods).toEqual(
      expect.arrayContaining(['credentials/list', 'credentials/info', 'signatures/signHash']),
    );
    expect(read.signature_formats.formats).toEqual(expect.arrayContaining(['C', 'P']));
    expect(read.conformance_levels).toContain('Ades-B-B');
  });

  it('holds the members 0.8.0 requires: without signature_formats info fails', async () => {
    const info = JSON.parse((await handleCscEvent(event('GET'), deps)).body) as Record<string, unknown>;
    const { signature_formats: _dropped, ...withoutFormats } = info;
    expect(issuesOf(withoutFormats)).toEqual([
      ...KNOWN_DIVERGENCES,
      { path: 'signature_formats', code: 'invalid_type' },
    ]);
  });
});

describe("the library's credential authorization, as our oauth2/authorize parses it", () => {
  const hashes = [createHash('sha256').update('document one').digest()];
  const subject: CredentialAuthorizationSubject = {
    credentialID: 'onetime-ec-p256',
    hashes,
    hashAlgorithmOID: '2.16.840.1.101.3.4.2.1',
    numSignatures: 1,
  };
  const verifier = 'library-pkce-verifier-of-at-least-43-characters';
  const pkce: AuthorizationClient = {
    clientId: client.clientId,
    redirectUri: client.redirectUris[0],
    codeChallenge: createHash('sha256').update(verifier).digest('base64url'),
    state: 'library-state',
  };

  it('by query parameters (no supportsRar, as our info makes it): accepted, its token read', async () => {
    const parsed = parseAuthorizationRequest(
      authorizationByScope(subject, pkce),
      client,
      pkce.redirectUri,
      () => 'request-1',
    );
    expect(parsed.scope).toBe('credential');
    expect(parsed.signing).toMatchObject({
      credentialID: 'onetime-ec-p256',
      numSignatures: 1,
      methods: ['signHash', 'signDoc'],
    });

    // The login done, the code redeemed as TokenEndpointForm.authCodeFlow sends it (client_secret_basic,
    // client_id in the form too; PassByScope: no authorization_details).
    codes.set('the-code', grantOf(parsed, 'id-token', Math.floor(Date.now() / 1000) + 60));
    const form = new URLSearchParams({
      grant_type: 'authorization_code',
      code: 'the-code',
      redirect_uri: pkce.redirectUri,
      code_verifier: verifier,
      client_id: client.clientId,
    });
    const res = await handleCscEvent(
      event('POST', 'oauth2/token', form.toString(), {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${client.clientId}:${SECRET}`).toString('base64')}`,
      }),
      deps,
    );
    expect(res.statusCode).toBe(200);
    const token = TokenResponse.parse(JSON.parse(res.body));
    expect(token.token_type).toBe('Bearer');
    expect(token.credentialID).toBe('onetime-ec-p256');
    // tokensOrFail reads the first entry: the authorized credential, digests and count.
    expect(token.authorization_details?.[0]).toMatchObject({
      credentialID: 'onetime-ec-p256',
      numSignatures: 1,
      hashAlgorithmOID: '2.16.840.1.101.3.4.2.1',
      documentDigests: [{ hash: hashes[0].toString('base64') }],
    });
  });

  it("by authorization_details of CSC v2.2's type: refused (a known divergence)", () => {
    // Only a server advertising supportsRar gets these; ours takes type `credential` (CSC v2.0.0.2).
    expect(() =>
      parseAuthorizationRequest(
        authorizationByDetails(subject, pkce),
        client,
        pkce.redirectUri,
        () => 'request-2',
      ),
    ).toThrow('authorization_details must be one entry of type credential');
  });
});
