/**
 * A small HTTP client for the local pipeline, shared by the demo, the end-to-end tests and the
 * benchmarks: sample requests, submit, long-poll, and independent verification of what comes back.
 */
import { X509Certificate, createHash, randomBytes, randomUUID, verify, constants } from 'node:crypto';
import {
  defaultSignatureAlgorithm,
  nodeHashName,
  type DigestAlgorithm,
  type KeyType,
  type SignatureAlgorithm,
} from '../../lambdas/core/src';

export interface SampleRequest {
  readonly body: {
    requestId?: string;
    digest: string;
    digestAlgorithm: DigestAlgorithm;
    keyType: KeyType;
    signatureAlgorithm: SignatureAlgorithm;
    signer: { commonName: string; givenName: string; surname: string; serialNumber: string; country: string };
  };
  /** The document whose digest is signed (kept to verify the signature with Node's crypto). */
  readonly document: Buffer;
}

const GIVEN = ['Anna', 'Björn', 'Åsa', 'Erik', 'Märta', "O'Neil", 'Jean-Luc'];
const SURNAMES = ['Andersson', 'Öberg', 'Lindqvist', 'Nyström', 'de la Cruz'];

export function sampleRequest(
  keyType: KeyType,
  i: number,
  options: {
    digestAlgorithm?: DigestAlgorithm;
    signatureAlgorithm?: SignatureAlgorithm;
    requestId?: boolean;
  } = {},
): SampleRequest {
  const digestAlgorithm = options.digestAlgorithm ?? 'SHA-256';
  const document = randomBytes(64);
  const givenName = GIVEN[i % GIVEN.length];
  const surname = SURNAMES[i % SURNAMES.length];
  return {
    document,
    body: {
      ...(options.requestId ? { requestId: randomUUID() } : {}),
      digest: createHash(nodeHashName(digestAlgorithm)).update(document).digest('base64'),
      digestAlgorithm,
      keyType,
      signatureAlgorithm: options.signatureAlgorithm ?? defaultSignatureAlgorithm(keyType),
      signer: {
        commonName: `${givenName} ${surname}`,
        givenName,
        surname,
        serialNumber: `19${String(700101 + (i % 300000)).padStart(6, '0')}${String(i % 10000).padStart(4, '0')}`,
        country: 'SE',
      },
    },
  };
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
  const res = await fetch(url, {
    method: init.method ?? (body !== undefined ? 'POST' : 'GET'),
    headers,
    body,
  });
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
  certificate?: string;
  chain?: string[];
  keyType: KeyType;
  signatureAlgorithm: SignatureAlgorithm;
  digestAlgorithm: DigestAlgorithm;
  pooledKey?: boolean;
  timings: Record<string, string | number | undefined> & { stageMs?: Record<string, number | undefined> };
  error?: { code: string; message: string };
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
  return { ok: true };
}
