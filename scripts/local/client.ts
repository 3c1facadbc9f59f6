/**
 * A small HTTP client for the local pipeline, shared by the demo, the end-to-end tests and the
 * benchmarks: sample requests, submit, long-poll, and independent verification of what comes back.
 */
import { X509Certificate, createHash, randomBytes, randomUUID, verify, constants } from 'node:crypto';
import {
  assertionNonce,
  bindingOf,
  signMessageHash,
  type SignMessage,
  type SignerIdentity,
} from '@pipeline/core/identity';
import {
  defaultSignatureAlgorithm,
  nodeHashName,
  type AdesProfile,
  type DigestAlgorithm,
  type KeyType,
  type SignatureAlgorithm,
  type SignatureFormat,
} from '@pipeline/core/shared';
import type { AuditReceipt } from '@pipeline/core/audit';
import { obtainIdToken } from '../client/src/oidc-login';
import { signRequestObject } from '../client/src/signing-client';
import { signApiRequest, type SigV4Credentials } from '../client/src/sigv4';
import { IDP_CLIENT_KEYS_DIR, localClientKey } from './client-keys';
import { LOA2_CITIZEN_INDEX, TEST_CITIZENS, type TestCitizen } from './idp/citizens';
import { CLIENT_IDS } from './idp/clients';
import { readRunnerInfo } from './runner-info';
import pLimit from 'p-limit';

export interface SampleRequest {
  readonly body: {
    requestId: string;
    digest: string;
    digestAlgorithm: DigestAlgorithm;
    keyType: KeyType;
    signatureAlgorithm: SignatureAlgorithm;
    format: SignatureFormat;
    profile?: AdesProfile;
    identityAssertion: string;
    signMessage?: SignMessage;
  };
  /** The document whose digest is signed (kept to verify the signature with Node's crypto). */
  readonly document: Buffer;
  /** The test citizen who logged in for it: the certificate must name this person. */
  readonly citizen: TestCitizen;
}

/** Citizens whose level of assurance the service accepts (the loa2 one is for refusal tests). */
const SIGNING_CITIZENS = TEST_CITIZENS.filter((_, i) => i !== LOA2_CITIZEN_INDEX);

/** The local IdP's issuer: set by the Jest set-up and the runner (LOCAL_IDP_ISSUER). */
export function localIssuer(): string {
  const issuer = process.env.LOCAL_IDP_ISSUER ?? readRunnerInfo()?.env.LOCAL_IDP_ISSUER;
  if (!issuer) throw new Error('no local identity provider: start the pipeline with `npm start` first');
  return issuer;
}

/**
 * A sign request as an e-service makes one: a random document, a fresh request id, and an ID token from
 * the local IdP for a test citizen, whose nonce binds the login to this request id, digest and way of
 * signing; or, with `vouchedBy`, that client's request object naming the citizen (the client's local
 * key must be registered: IDENTITY_CLIENT_KEYS).
 */
export async function sampleRequest(
  keyType: KeyType,
  i: number,
  options: {
    digestAlgorithm?: DigestAlgorithm;
    signatureAlgorithm?: SignatureAlgorithm;
    format?: SignatureFormat;
    profile?: AdesProfile;
    citizen?: TestCitizen;
    issuer?: string;
    /** An API client id: that client vouches for the citizen in a request object instead of a login. */
    vouchedBy?: string;
    /** A sign message the citizen approves at the IdP (the signature extension). */
    signMessage?: SignMessage;
  } = {},
): Promise<SampleRequest> {
  const digestAlgorithm = options.digestAlgorithm ?? 'SHA-256';
  const document = randomBytes(64);
  const citizen = options.citizen ?? SIGNING_CITIZENS[i % SIGNING_CITIZENS.length];
  const format = options.format ?? (options.profile ? 'cms' : 'raw');
  const binding = bindingOf({
    id: randomUUID(),
    digest: createHash(nodeHashName(digestAlgorithm)).update(document).digest('base64'),
    digestAlgorithm,
    keyType,
    signatureAlgorithm: options.signatureAlgorithm ?? defaultSignatureAlgorithm(keyType),
    format,
    profile: options.profile ?? (format === 'cms' ? 'CAdES-B-B' : undefined),
  });
  const message = options.signMessage;
  const nonce = assertionNonce(message ? { ...binding, signMessageHash: signMessageHash(message) } : binding);
  const identityAssertion = options.vouchedBy
    ? await signRequestObject({
        key: localClientKey(options.vouchedBy),
        clientId: options.vouchedBy,
        binding: { ...binding, ...(message ? { signMessage: message } : {}) },
        signer: signerOf(citizen),
      })
    : (
        await obtainIdToken({
          issuer: options.issuer ?? localIssuer(),
          clientId: CLIENT_IDS.signingService,
          personalIdentityNumber: citizen.personalIdentityNumber,
          nonce,
          ...(message
            ? {
                signature: {
                  key: localClientKey(CLIENT_IDS.signingService, IDP_CLIENT_KEYS_DIR),
                  tbsData: binding.digest,
                  signMessage: message,
                },
              }
            : {}),
        })
      ).idToken;
  return {
    document,
    citizen,
    body: { ...binding, identityAssertion, ...(message ? { signMessage: message } : {}) },
  };
}

/** The certificate subject a test citizen gets (the mapping of the local IdP's claims). */
export function signerOf(citizen: TestCitizen): SignerIdentity {
  return {
    commonName: citizen.name,
    givenName: citizen.givenName,
    surname: citizen.familyName,
    serialNumber: citizen.personalIdentityNumber,
    country: 'SE',
  };
}

/** `count` sample requests, logins a few at a time (the IdP is a process of its own on the same cores). */
export async function sampleRequests(
  count: number,
  make: (i: number) => Promise<SampleRequest>,
  parallel = 8,
): Promise<SampleRequest[]> {
  return pLimit(parallel).map(
    Array.from({ length: count }, (_, i) => i),
    (i) => make(i),
  );
}

export interface HttpResult<T = Record<string, unknown>> {
  readonly status: number;
  readonly headers: Headers;
  readonly body: T;
}

export async function call<T = Record<string, unknown>>(
  url: string,
  init: {
    method?: string;
    apiKey?: string;
    /** Signs the call (SigV4) with these credentials: a client's own, as IAM authorization wants. */
    credentials?: SigV4Credentials;
    body?: unknown;
    rawBody?: string;
    headers?: Record<string, string>;
  } = {},
): Promise<HttpResult<T>> {
  const headers: Record<string, string> = { ...(init.headers ?? {}) };
  if (init.apiKey) headers['x-api-key'] = init.apiKey;
  let body: string | undefined = init.rawBody;
  if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers['content-type'] ??= 'application/json';
  }
  const method = init.method ?? (body !== undefined ? 'POST' : 'GET');
  if (init.credentials) {
    Object.assign(headers, await signApiRequest(init.credentials, { url, method, headers, body }));
  }
  const res = await fetch(url, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // non-JSON answers are returned as text (tests assert they never happen)
  }
  return { status: res.status, headers: res.headers, body: parsed as T };
}

export interface SignRequestView {
  id: string;
  status: 'received' | 'signing' | 'signed' | 'failed';
  signature?: string;
  cms?: string;
  certificate?: string;
  certificateSerial?: string;
  receipt?: AuditReceipt;
  chain?: string[];
  keyType: KeyType;
  signatureAlgorithm: SignatureAlgorithm;
  digestAlgorithm: DigestAlgorithm;
  pooledKey?: boolean;
  timings: Record<string, string | number | undefined> & { stageMs?: Record<string, number | undefined> };
  error?: { code: string; message: string };
}

/**
 * Submits a sign request that waits for its result (`POST ?wait=20`): one call when it ends within the
 * wait, else long-polls it (`GET ?wait=20`) until it is signed or failed. `status` is that state, or
 * `HTTP <code>` when the API refused the POST or a read. Network failures throw.
 */
export async function submitAndWait(
  url: string,
  apiKey: string,
  body: unknown,
  /** The client's own credentials: every call is signed with them (SigV4). */
  credentials?: SigV4Credentials,
): Promise<{ status: string; view?: SignRequestView }> {
  const submitted = await call<SignRequestView>(`${url}/sign-requests?wait=20`, {
    apiKey,
    credentials,
    body,
  });
  if (submitted.status !== 202 && submitted.status !== 200) return { status: `HTTP ${submitted.status}` };
  const ended = (view: SignRequestView): boolean => view.status === 'signed' || view.status === 'failed';
  if (submitted.status === 200 && ended(submitted.body))
    return { status: submitted.body.status, view: submitted.body };
  for (;;) {
    const res = await call<SignRequestView>(`${url}/sign-requests/${submitted.body.id}?wait=20`, {
      apiKey,
      credentials,
    });
    if (res.status !== 200) return { status: `HTTP ${res.status}` };
    if (ended(res.body)) return { status: res.body.status, view: res.body };
  }
}

/** Signs one sample EC-P256 request of the default client and returns its record; throws unless signed. */
export async function signSample(url: string, apiKey: string, index: number): Promise<SignRequestView> {
  const request = await sampleRequest('EC-P256', index);
  const { status, view } = await submitAndWait(url, apiKey, request.body);
  if (status !== 'signed' || !view) throw new Error(`sample request ${index} ended ${status}`);
  return view;
}

/** Checks a signed result: signature over the document with the certificate's key, and the chain. */
export function verifySignedResult(
  request: SampleRequest,
  view: SignRequestView,
  rootPem: string,
): { ok: boolean; problem?: string } {
  if (view.status !== 'signed' || !view.signature || !view.certificate || !view.chain) {
    return { ok: false, problem: `status ${view.status} ${view.error?.code ?? ''}` };
  }
  const leaf = new X509Certificate(view.certificate);
  const padding =
    view.signatureAlgorithm === 'RSASSA-PSS'
      ? { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST }
      : {};
  const signatureOk = verify(
    nodeHashName(view.digestAlgorithm),
    request.document,
    { key: leaf.publicKey, ...padding },
    Buffer.from(view.signature, 'base64'),
  );
  if (!signatureOk) return { ok: false, problem: 'signature does not verify with the certificate key' };
  const [issuing, root] = view.chain.map((pem) => new X509Certificate(pem));
  const trustedRoot = new X509Certificate(rootPem);
  if (!root || root.fingerprint256 !== trustedRoot.fingerprint256)
    return { ok: false, problem: 'unknown root' };
  if (!leaf.checkIssued(issuing) || !leaf.verify(issuing.publicKey))
    return { ok: false, problem: 'leaf not issued by CA' };
  if (!issuing.checkIssued(trustedRoot) || !issuing.verify(trustedRoot.publicKey)) {
    return { ok: false, problem: 'issuing CA not issued by root' };
  }
  // The person of the assertion, and no one else, is the subject.
  const { citizen } = request;
  const expected = `serialNumber=${citizen.personalIdentityNumber}\nCN=${citizen.name}`;
  if (!leaf.subject.includes(expected) || !leaf.subject.includes(`GN=${citizen.givenName}`)) {
    return { ok: false, problem: 'the certificate does not name the citizen who logged in' };
  }
  return { ok: true };
}
