/**
 * The CSC front door's pure logic: the authorization request (PKCE S256, scopes, credentials, hashes,
 * numSignatures, authorization_details), the binding its nonce makes (the API's nonce of the sign
 * request the authorization will run), PKCE and secret checks, the credentials and the one mapping of the
 * service's client codes to CSC errors.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  approvalRequestOf,
  authorizedDigests,
  authorizingClient,
  checkSignAlgo,
  clientSecretMatches,
  conformanceLevelOf,
  creationApprovalOf,
  credentialById,
  credentialInfo,
  CSC_CREDENTIALS,
  CSC_ERRORS,
  CscError,
  cscErrorFor,
  cscInfo,
  flowParams,
  grantedAuthorizationDetails,
  nonceOf,
  parseAuthorizationRequest,
  pkceMatches,
  registeredClient,
  registeredRedirect,
  requestOfFlow,
  seal,
  secretHash,
  unseal,
  type CscClient,
} from '../src/csc';
import {
  assertionNonce,
  composeSignMessage,
  credentialDigest,
  manifestHash,
  signMessageHash,
} from '../src/identity';
import { CLIENT_CODES } from '../src/shared';

const SECRET = 'correct horse battery staple';
const CLIENT: CscClient = {
  clientId: 'e-service',
  name: 'The e-service',
  secretHash: secretHash(SECRET),
  redirectUris: ['https://e-service.example/cb'],
};
const verifier = randomBytes(32).toString('base64url');
const challenge = createHash('sha256').update(verifier).digest('base64url');
const digest = randomBytes(32);
const REQUEST_ID = '0b5c8f1e-8b8e-4c39-9f57-0d1a2f3b4c5d';
const OTHER_REQUEST_ID = '6f1d3a52-0c4e-4b7a-9d2e-3a5b7c9d1e2f';

const credentialParams = (over: Record<string, string> = {}): Record<string, string> => ({
  response_type: 'code',
  client_id: CLIENT.clientId,
  redirect_uri: CLIENT.redirectUris[0],
  scope: 'credential',
  code_challenge: challenge,
  code_challenge_method: 'S256',
  credentialID: 'onetime-ec-p256',
  numSignatures: '1',
  hashes: digest.toString('base64url'),
  hashAlgorithmOID: '2.16.840.1.101.3.4.2.1',
  state: 'xyz',
  ...over,
});

const parse = (params: Record<string, string>) =>
  parseAuthorizationRequest(params, CLIENT, CLIENT.redirectUris[0], () => REQUEST_ID);

const refusal = (f: () => unknown): { error: string; error_description: string } => {
  try {
    f();
  } catch (err) {
    if (err instanceof CscError) return err.toJSON();
    throw err;
  }
  throw new Error('not refused');
};

describe('the authorization request', () => {
  it('binds a credential authorization to the sign request its nonce names: the hash in any format, the credential key type and scheme, the sign message', () => {
    const request = parse(credentialParams({ description: 'Building permit' }));
    expect(request.scope).toBe('credential');
    const signing = request.signing!;
    expect(signing.binding).toEqual({
      requestId: REQUEST_ID,
      digestAlgorithm: 'SHA-256',
      digest: digest.toString('base64'),
      keyType: 'EC-P256',
      signatureAlgorithm: 'ECDSA',
      format: 'raw',
      formatOpen: true,
      signMessageHash: signMessageHash(signing.signMessage),
    });
    expect(signing.signMessage.text).toContain('The e-service');
    expect(signing.signMessage.text).toContain('Building permit');
    // The nonce is exactly the API's for that sign request: the API and the CA check it unchanged.
    expect(nonceOf(signing)).toBe(assertionNonce(signing.binding));
  });

  it('takes authorization_details of type credential (documentDigests, hashAlgorithmOID); a single hash keeps its label', () => {
    const {
      credentialID: _c,
      numSignatures: _n,
      hashes: _h,
      hashAlgorithmOID: _a,
      scope: _s,
      ...rest
    } = credentialParams();
    const request = parse({
      ...rest,
      authorization_details: JSON.stringify([
        {
          type: 'credential',
          credentialID: 'onetime-rsa-3072-pss',
          documentDigests: [{ hash: digest.toString('base64'), label: 'A document' }],
          hashAlgorithmOID: '2.16.840.1.101.3.4.2.1',
        },
      ]),
    });
    expect(request.signing?.binding).toMatchObject({
      keyType: 'RSA-3072',
      signatureAlgorithm: 'RSASSA-PSS',
      documents: [{ digest: digest.toString('base64'), name: 'A document' }],
    });
    expect(approvalRequestOf(request.signing!).signMessage.text).toContain('1. A document');
  });

  it('binds several hashes to the manifest of their documents (v3), each named by its label in the sign message', () => {
    const other = randomBytes(32);
    const { numSignatures: _n, hashes: _h, hashAlgorithmOID: _a, scope: _s, ...rest } = credentialParams();
    const signing = parse({
      ...rest,
      authorization_details: JSON.stringify({
        type: 'credential',
        credentialID: 'onetime-ec-p256',
        hashAlgorithmOID: '2.16.840.1.101.3.4.2.1',
        documentDigests: [
          { hash: digest.toString('base64url'), label: 'contract.pdf' },
          { hash: other.toString('base64url') },
        ],
      }),
    }).signing!;
    // The hashes alone: approved in any format, for signHash or for signDoc in the format it names.
    expect(signing).toMatchObject({ methods: ['signHash', 'signDoc'], numSignatures: 2 });
    const documents = [
      { digestAlgorithm: 'SHA-256', digest: digest.toString('base64'), format: 'raw', name: 'contract.pdf' },
      { digestAlgorithm: 'SHA-256', digest: other.toString('base64'), format: 'raw' },
    ] as const;
    expect(authorizedDigests(signing)).toEqual(documents.map((d) => d.digest));
    const shown = composeSignMessage(signing.signMessage, documents);
    expect(shown.text).toContain('Documents (2):\n1. contract.pdf\n2. unnamed (SHA-256 ');
    const manifest = {
      requestId: REQUEST_ID,
      keyType: 'EC-P256',
      signatureAlgorithm: 'ECDSA',
      documents,
      signMessageHash: signMessageHash(shown),
      formatOpen: true,
    } as const;
    expect(signing.binding).toEqual(manifest);
    // The API's v3 nonce of that request, and the provider is asked to approve the manifest, formats open.
    expect(nonceOf(signing)).toBe(assertionNonce(manifest));
    expect(nonceOf(signing)).not.toBe(assertionNonce({ ...manifest, formatOpen: undefined }));
    expect(approvalRequestOf(signing)).toEqual({
      tbsData: manifestHash(documents, true),
      signMessage: shown,
    });
    expect(manifestHash(documents, true)).not.toBe(manifestHash(documents));
  });

  it('binds a signDoc authorization to cms with the profile of signature_format, and keeps the level', () => {
    const signing = parse(
      credentialParams({ signature_format: 'P', conformance_level: 'AdES-B-LT' }),
    ).signing!;
    expect(signing).toMatchObject({
      methods: ['signDoc'],
      document: { signatureFormat: 'P', conformanceLevel: 'Ades-B-LT', profile: 'PAdES-B-B', level: 'B-LT' },
    });
    expect(signing.binding).toMatchObject({ format: 'cms', profile: 'PAdES-B-B' });
    expect(signing.binding).not.toHaveProperty('formatOpen');
    const cades = parse(
      credentialParams({ signature_format: 'C', conformance_level: 'AdES-B-LTA' }),
    ).signing!;
    expect(cades.binding).toMatchObject({ format: 'cms', profile: 'CAdES-B-B' });
    expect(cades.document?.level).toBe('B-LTA');
    expect(parse(credentialParams()).signing?.methods).toEqual(['signHash', 'signDoc']);
    expect(parse(credentialParams()).signing?.binding).toMatchObject({ format: 'raw', formatOpen: true });
    // The specification's spelling and the common one are the same level.
    expect(
      parse(credentialParams({ signature_format: 'C', conformance_level: 'Ades-B-T' })).signing?.document,
    ).toMatchObject({ conformanceLevel: 'Ades-B-T', level: 'B-T' });
    expect(conformanceLevelOf('AdES-B-B')).toBe('Ades-B-B');
    expect(conformanceLevelOf('toString')).toBeUndefined();
    expect(
      refusal(() =>
        parse(credentialParams({ signature_format: 'constructor', conformance_level: 'Ades-B-B' })),
      ).error,
    ).toBe('invalid_request');
  });

  it('takes numSignatures only as an integer, and a label only as a string', () => {
    for (const numSignatures of ['1e0', '1.0', ' 1', '0x1', '01']) {
      expect(refusal(() => parse(credentialParams({ numSignatures })))).toEqual({
        error: 'invalid_request',
        error_description: 'Invalid parameter numSignatures: a positive integer',
      });
    }
    const { numSignatures: _n, hashes: _h, hashAlgorithmOID: _a, scope: _s, ...rest } = credentialParams();
    const details = (extra: Record<string, unknown>) =>
      parse({
        ...rest,
        authorization_details: JSON.stringify({
          type: 'credential',
          credentialID: 'onetime-ec-p256',
          hashAlgorithmOID: '2.16.840.1.101.3.4.2.1',
          documentDigests: [{ hash: digest.toString('base64url') }],
          ...extra,
        }),
      });
    expect(details({ numSignatures: 1 }).signing?.numSignatures).toBe(1);
    for (const numSignatures of ['1e0', 1.5, true, 2]) {
      expect(refusal(() => details({ numSignatures })).error).toBe('invalid_request');
    }
    expect(refusal(() => details({ label: { text: 'x' } }))).toEqual({
      error: 'invalid_request',
      error_description: 'Invalid parameter label: a string',
    });
    expect(details({ label: 'Tax return' }).signing?.signMessage.text).toContain('Tax return');
  });

  it('grants, in the token response, the authorization_details the login binds (RFC 9396 7)', () => {
    const other = randomBytes(32);
    const { numSignatures: _n, hashes: _h, hashAlgorithmOID: _a, scope: _s, ...rest } = credentialParams();
    const signing = parse({
      ...rest,
      authorization_details: JSON.stringify([
        {
          type: 'credential',
          credentialID: 'onetime-ec-p256',
          hashAlgorithmOID: '2.16.840.1.101.3.4.2.1',
          documentDigests: [
            { hash: digest.toString('base64url'), label: 'a.pdf' },
            { hash: other.toString('base64url') },
          ],
          signature_format: 'C',
          conformance_level: 'AdES-B-LT',
        },
      ]),
    }).signing!;
    expect(grantedAuthorizationDetails(signing)).toEqual([
      {
        type: 'credential',
        credentialID: 'onetime-ec-p256',
        hashAlgorithmOID: '2.16.840.1.101.3.4.2.1',
        numSignatures: 2,
        documentDigests: [
          { hash: digest.toString('base64'), label: 'a.pdf' },
          { hash: other.toString('base64') },
        ],
        signature_format: 'C',
        conformance_level: 'Ades-B-LT',
      },
    ]);
    expect(grantedAuthorizationDetails(parse(credentialParams()).signing!)).toEqual([
      {
        type: 'credential',
        credentialID: 'onetime-ec-p256',
        hashAlgorithmOID: '2.16.840.1.101.3.4.2.1',
        numSignatures: 1,
        documentDigests: [{ hash: digest.toString('base64') }],
      },
    ]);
  });

  it('remembers whether redirect_uri was sent (oauth2/token then requires it)', () => {
    expect(parse(credentialParams()).redirectUriSent).toBe(true);
    const { redirect_uri: _r, ...without } = credentialParams();
    expect(parse(without).redirectUriSent).toBe(false);
  });

  it('requires PKCE with S256', () => {
    expect(refusal(() => parse(credentialParams({ code_challenge_method: 'plain' })))).toEqual({
      error: 'invalid_request',
      error_description: 'code_challenge_method must be S256',
    });
    const { code_challenge: _c, ...without } = credentialParams();
    expect(refusal(() => parse(without)).error).toBe('invalid_request');
  });

  it.each([
    [{ response_type: 'token' }, 'unsupported_response_type'],
    [{ scope: 'everything' }, 'invalid_scope'],
    [{ credentialID: 'someone-elses-key' }, 'invalid_request'],
    [{ numSignatures: '2' }, 'invalid_request'],
    [{ numSignatures: '0' }, 'invalid_request'],
    [{ hashAlgorithmOID: '1.3.14.3.2.26' }, 'invalid_request'],
    [{ hashes: randomBytes(20).toString('base64url') }, 'invalid_request'],
    [
      { hashes: Array(51).fill(digest.toString('base64url')).join(','), numSignatures: '51' },
      'invalid_request',
    ],
    [{ signature_format: 'X', conformance_level: 'AdES-B-LT' }, 'invalid_request'],
    [{ signature_format: 'P', conformance_level: 'AdES-B-LTX' }, 'invalid_request'],
    [{ signature_format: 'P' }, 'invalid_request'],
    [{ description: 'hidden\u200btext' }, 'invalid_request'],
  ])('refuses %j with %s', (over, error) => {
    expect(refusal(() => parse(credentialParams(over as Record<string, string>))).error).toBe(error);
  });

  it('accepts scope service without hashes: its login creates a one-time credential of the default type', () => {
    const request = parse({
      response_type: 'code',
      client_id: CLIENT.clientId,
      scope: 'service',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    expect(request).toMatchObject({
      clientId: CLIENT.clientId,
      redirectUri: CLIENT.redirectUris[0],
      redirectUriSent: false,
      codeChallenge: challenge,
      scope: 'service',
      creation: {
        credentialID: `onetime-ec-p256.${REQUEST_ID}`,
        binding: {
          requestId: REQUEST_ID,
          keyType: 'EC-P256',
          signatureAlgorithm: 'ECDSA',
          credential: 'create',
        },
      },
    });
    expect(request.signing).toBeUndefined();
    // The login approves the creation: its nonce binds the request id, key type and the message.
    const { binding, signMessage } = request.creation!;
    expect(binding.signMessageHash).toBe(signMessageHash(signMessage));
    expect(signMessage.text).toContain('one-time signing certificate in your name');
    expect(nonceOf(request.creation!)).toBe(assertionNonce(binding));
    expect(creationApprovalOf(request.creation!).tbsData).toBe(credentialDigest(binding));
  });

  it("creates a credential of the type credentialID names at scope service, never a login's own", () => {
    const base = {
      response_type: 'code',
      client_id: CLIENT.clientId,
      scope: 'service',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    };
    expect(parse({ ...base, credentialID: 'onetime-rsa-3072-pss' }).creation?.binding).toMatchObject({
      keyType: 'RSA-3072',
      signatureAlgorithm: 'RSASSA-PSS',
    });
    expect(refusal(() => parse({ ...base, credentialID: `onetime-ec-p256.${REQUEST_ID}` })).error).toBe(
      'invalid_request',
    );
  });

  it("binds a login's own credential at scope credential: the binding's credential line names its request", () => {
    const own = `onetime-ec-p256.${OTHER_REQUEST_ID}`;
    const request = parse(credentialParams({ credentialID: own }));
    expect(request.signing).toMatchObject({ credentialID: own, binding: { credentialId: OTHER_REQUEST_ID } });
    expect(nonceOf(request.signing!)).not.toBe(
      assertionNonce({ ...request.signing!.binding, credentialId: undefined }),
    );
    expect(refusal(() => credentialById('onetime-ec-p256.not-a-uuid')).error).toBe('invalid_request');
    expect(refusal(() => credentialById(`onetime-ec-p999.${OTHER_REQUEST_ID}`)).error).toBe(
      'invalid_request',
    );
  });

  it('knows the client and its exact redirect URI before anything else', () => {
    expect(refusal(() => authorizingClient({ client_id: 'nobody' }, [CLIENT])).error).toBe('invalid_client');
    expect(
      refusal(() =>
        authorizingClient(
          { client_id: CLIENT.clientId, redirect_uri: 'https://e-service.example/cb/../evil' },
          [CLIENT],
        ),
      ).error,
    ).toBe('invalid_request');
    expect(authorizingClient({ client_id: CLIENT.clientId }, [CLIENT]).redirectUri).toBe(
      CLIENT.redirectUris[0],
    );
  });
});

describe('PKCE and client secrets', () => {
  it('matches the S256 verifier only', () => {
    expect(pkceMatches(verifier, challenge)).toBe(true);
    expect(pkceMatches(randomBytes(32).toString('base64url'), challenge)).toBe(false);
    expect(pkceMatches(challenge, challenge)).toBe(false);
    expect(pkceMatches(undefined, challenge)).toBe(false);
  });

  it('compares client secrets by their hashes', () => {
    expect(clientSecretMatches(CLIENT, SECRET)).toBe(true);
    expect(clientSecretMatches(CLIENT, `${SECRET} `)).toBe(false);
    expect(clientSecretMatches(CLIENT, '')).toBe(false);
    expect(clientSecretMatches(CLIENT, undefined)).toBe(false);
  });
});

describe('the one-time credentials', () => {
  it('offers one credential per key type and scheme, with SCAL 2, oauth2code and multisign 50', () => {
    expect(CSC_CREDENTIALS.map((c) => c.credentialID)).toEqual([
      'onetime-rsa-2048',
      'onetime-rsa-2048-pss',
      'onetime-rsa-3072',
      'onetime-rsa-3072-pss',
      'onetime-rsa-4096',
      'onetime-rsa-4096-pss',
      'onetime-ec-p256',
      'onetime-ec-p384',
    ]);
    expect(credentialInfo(credentialById('onetime-rsa-2048'))).toMatchObject({
      key: { status: 'enabled', algo: expect.arrayContaining(['1.2.840.113549.1.1.1']), len: 2048 },
      cert: { certificates: [] },
      auth: { mode: 'oauth2code' },
      SCAL: '2',
      multisign: 50,
    });
  });

  it("accepts only the credential's own scheme as signAlgo", () => {
    const ec = credentialById('onetime-ec-p256');
    expect(() => checkSignAlgo(ec, '1.2.840.10045.4.3.2', 'SHA-256')).not.toThrow();
    expect(() => checkSignAlgo(ec, '1.2.840.10045.2.1', 'SHA-256')).not.toThrow();
    expect(() => checkSignAlgo(ec, '1.2.840.10045.4.3.3', 'SHA-256')).toThrow(CscError);
    expect(() => checkSignAlgo(ec, '1.2.840.113549.1.1.11', 'SHA-256')).toThrow(CscError);
    expect(() =>
      checkSignAlgo(credentialById('onetime-rsa-2048-pss'), '1.2.840.113549.1.1.10', 'SHA-256'),
    ).not.toThrow();
  });

  it('describes the service as CSC 2.0.0.2 with oauth2code', () => {
    const info = cscInfo({
      name: 'n',
      logo: 'https://x/logo.png',
      region: 'SE',
      lang: 'en-US',
      description: 'd',
      oauth2: 'https://x/csc/v2',
    });
    expect(info).toMatchObject({ specs: '2.0.0.2', authType: ['oauth2code'], oauth2: 'https://x/csc/v2' });
    // What v2.0.0.2 defines and reference clients (the EUDI rQES library) require.
    expect(info).toMatchObject({
      signature_formats: {
        formats: ['C', 'P'],
        envelope_properties: [['Detached'], ['Certification', 'Revision']],
      },
      conformance_levels: ['Ades-B-B', 'Ades-B-T', 'Ades-B-LT', 'Ades-B-LTA'],
      asynchronousOperationMode: true,
      validationInfo: true,
    });
    // Every conformance level offered is one authorize takes.
    for (const level of info.conformance_levels as string[]) {
      expect(
        parse(credentialParams({ signature_format: 'C', conformance_level: level })).signing?.methods,
      ).toEqual(['signDoc']);
    }
  });
});

describe('client codes as CSC errors', () => {
  it("maps every refusal of the client's own making to a 4xx CSC error, and the service's to a 5xx one", () => {
    for (const [code, entry] of Object.entries(CLIENT_CODES)) {
      const status = (entry as { status?: number }).status;
      if (status === undefined) continue;
      expect([code, CSC_ERRORS[cscErrorFor(code)] >= 500]).toEqual([code, status >= 500]);
    }
  });

  it.each([
    ['ASSERTION_REPLAYED', 'access_denied'],
    ['ASSERTION_APPROVAL_MISMATCH', 'access_denied'],
    ['VALIDATION_FAILED', 'invalid_request'],
    ['POOL_EMPTY', 'too_many_requests'],
    ['KEYS_UNAVAILABLE', 'temporarily_unavailable'],
    ['HSM_SIGN_FAILED', 'server_error'],
    ['THROTTLED', 'too_many_requests'],
    ['CREDENTIAL_USED', 'invalid_request'],
    ['CREDENTIAL_EXPIRED', 'invalid_request'],
  ])('%s is %s', (code, error) => expect(cscErrorFor(code)).toBe(error));
});

describe('the CSC table: sealed for the holder of the secret', () => {
  const grant = { clientId: 'e-service', idToken: 'eyJ.the-citizen.token' };

  it('opens only with the same secret for the same item', () => {
    const sealed = seal('the-code', 'CODE#abc', grant);
    expect(sealed).not.toContain('the-citizen');
    expect(Buffer.from(sealed.slice(3), 'base64url').toString('latin1')).not.toContain('the-citizen');
    expect(unseal('the-code', 'CODE#abc', sealed)).toEqual(grant);
    expect(unseal('another-code', 'CODE#abc', sealed)).toBeUndefined();
    // Moved to another item: the item key is the AAD.
    expect(unseal('the-code', 'TOKEN#abc', sealed)).toBeUndefined();
  });

  it('refuses an edited, truncated or foreign value', () => {
    const sealed = seal('the-token', 'TOKEN#abc', grant);
    const raw = Buffer.from(sealed.slice(3), 'base64url');
    raw[20] ^= 1;
    expect(unseal('the-token', 'TOKEN#abc', `v1.${raw.toString('base64url')}`)).toBeUndefined();
    expect(unseal('the-token', 'TOKEN#abc', sealed.slice(0, 20))).toBeUndefined();
    expect(unseal('the-token', 'TOKEN#abc', JSON.stringify(grant))).toBeUndefined();
    expect(unseal('the-token', 'TOKEN#abc', { grant })).toBeUndefined();
    // Two seals of one value differ (a fresh IV each).
    expect(seal('the-token', 'TOKEN#abc', grant)).not.toBe(sealed);
  });

  it('keeps of a flow only the known parameters, and parses the same request from them at the callback', () => {
    const params = {
      ...credentialParams({ description: 'Building permit' }),
      padding: 'x'.repeat(1000),
      scope: '',
    };
    const kept = flowParams({ ...params, scope: 'credential' });
    expect(Object.keys(kept)).not.toContain('padding');
    expect(JSON.stringify(kept).length).toBeLessThan(500);
    const request = parse(kept);
    expect(requestOfFlow({ params: kept, requestId: REQUEST_ID }, [CLIENT])).toEqual(request);
    expect(nonceOf(requestOfFlow({ params: kept, requestId: REQUEST_ID }, [CLIENT]).signing!)).toBe(
      nonceOf(request.signing!),
    );
    // An edited redirect URI or a client no longer registered is refused, never redirected to.
    expect(
      refusal(() =>
        requestOfFlow(
          { params: { ...kept, redirect_uri: 'http://evil.example/steal' }, requestId: REQUEST_ID },
          [CLIENT],
        ),
      ).error_description,
    ).toBe('redirect_uri is not registered for this client');
    expect(refusal(() => requestOfFlow({ params: kept, requestId: REQUEST_ID }, [])).error).toBe(
      'invalid_client',
    );
  });

  it('refuses a state longer than 512 characters', () => {
    expect(parse(credentialParams({ state: 's'.repeat(512) })).state).toHaveLength(512);
    expect(refusal(() => parse(credentialParams({ state: 's'.repeat(513) })))).toEqual({
      error: 'invalid_request',
      error_description: 'Invalid parameter state: at most 512 characters',
    });
  });

  it('takes only registered clients and their registered redirect URIs', () => {
    expect(registeredClient('e-service', [CLIENT])).toBe(CLIENT);
    expect(refusal(() => registeredClient('attacker', [CLIENT]))).toEqual({
      error: 'invalid_token',
      error_description: 'the access token is not of a registered client',
    });
    expect(() => registeredRedirect('e-service', CLIENT.redirectUris[0], [CLIENT])).not.toThrow();
    expect(refusal(() => registeredRedirect('e-service', 'http://evil.example/steal', [CLIENT])).error).toBe(
      'invalid_request',
    );
    expect(refusal(() => registeredRedirect('attacker', CLIENT.redirectUris[0], [CLIENT])).error).toBe(
      'invalid_request',
    );
  });
});
