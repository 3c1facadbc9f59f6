/**
 * The signing service's API as an e-service calls it: pick a request id, compute the nonce that binds the
 * citizen's login to this request, this document and how it is signed, get the ID token from the identity
 * provider (see oidc-login.ts) - or, as a client registered to vouch for its signers, sign a request
 * object - submit, and wait for the result. No dependency on the service's code but the nonce rule and
 * the request object's shape, which are re-stated here so an e-service can copy this file (and sigv4.ts,
 * which signs its calls with its IAM credentials) alone.
 */
import { createHash, randomUUID } from 'node:crypto';
import { SignJWT, type CryptoKey, type JWK, type KeyObject } from 'jose';
import { signApiRequest, type SigV4Credentials } from './sigv4';

export type DigestAlgorithm = 'SHA-256' | 'SHA-384' | 'SHA-512';
export type KeyType = 'RSA-2048' | 'RSA-3072' | 'RSA-4096' | 'EC-P256' | 'EC-P384';
export type SignatureAlgorithm = 'RSASSA-PKCS1-v1_5' | 'RSASSA-PSS' | 'ECDSA';
export type SignatureLevel = 'B-B' | 'B-T' | 'B-LT' | 'B-LTA';

/**
 * The text the citizen is shown and approves at the identity provider before anything is signed: plain
 * text (default) or Markdown, at most 1000 characters, no control characters but tab and line feed.
 */
export interface SignMessage {
  readonly text: string;
  readonly mimeType?: 'text/plain' | 'text/markdown';
}

/** What a login (or a request object) authorises: exactly the values sent in the sign request. */
export interface SignBinding {
  readonly requestId: string;
  readonly digestAlgorithm: DigestAlgorithm;
  /** Standard base64, exactly as sent. */
  readonly digest: string;
  readonly keyType: KeyType;
  readonly signatureAlgorithm: SignatureAlgorithm;
  readonly format: 'raw' | 'cms';
  /** For `cms` only. */
  readonly profile?: 'CAdES-B-B' | 'PAdES-B-B';
  /** For `cms`: the AdES level (default B-LT) and the lowest accepted (default the level). */
  readonly level?: SignatureLevel;
  readonly minimumLevel?: SignatureLevel;
  /** Shown to the citizen by the identity provider; the login must then attest it (signature extension). */
  readonly signMessage?: SignMessage;
}

/** The sign message's hash: lower-case hex SHA-256 of the UTF-8 of mimeType + "\n" + text. */
export function signMessageHash(message: SignMessage): string {
  return createHash('sha256')
    .update(`${message.mimeType ?? 'text/plain'}\n${message.text}`, 'utf8')
    .digest('hex');
}

/**
 * The `nonce` to send in the authorization request (and that the ID token then carries): base64url of the
 * SHA-256 of these lines joined by "\n": "hsm-signing-pipeline/sign-request/v2", the request id in lower
 * case, digestAlgorithm, digest, keyType, signatureAlgorithm, format, profile (empty for raw), and with a
 * sign message its hash (signMessageHash) as a ninth line. Send the same values, explicitly, in the sign
 * request.
 */
export function signRequestNonce(binding: SignBinding): string {
  const lines = [
    'hsm-signing-pipeline/sign-request/v2',
    binding.requestId.toLowerCase(),
    binding.digestAlgorithm,
    binding.digest,
    binding.keyType,
    binding.signatureAlgorithm,
    binding.format,
    binding.profile ?? '',
  ];
  if (binding.signMessage) lines.push(signMessageHash(binding.signMessage));
  return createHash('sha256').update(lines.join('\n')).digest('base64url');
}

/** At most this many documents in one request (one login, one key, one certificate). */
export const MAX_DOCUMENTS = 50;
/** The composed sign message (the e-service's text and the list of documents) is at most this long. */
export const MAX_COMPOSED_SIGN_MESSAGE_LENGTH = 8000;

/** One document of a `documents` request: its digest and how it is signed. */
export interface DocumentBinding {
  /** Shown to the citizen in the composed sign message: 1 to 120 characters, one line. */
  readonly name?: string;
  /** Standard base64, exactly as sent. */
  readonly digest: string;
  readonly digestAlgorithm: DigestAlgorithm;
  /** Default `raw`. */
  readonly format?: 'raw' | 'cms';
  /** For `cms` only (default CAdES-B-B). */
  readonly profile?: 'CAdES-B-B' | 'PAdES-B-B';
  /** For `cms`: the AdES level (default B-LT) and the lowest accepted (default the level). */
  readonly level?: SignatureLevel;
  readonly minimumLevel?: SignatureLevel;
}

/** What one login authorises for several documents: one key and one certificate for all of them. */
export interface DocumentsBinding {
  readonly requestId: string;
  readonly keyType: KeyType;
  readonly signatureAlgorithm: SignatureAlgorithm;
  /** 1 to MAX_DOCUMENTS, in the order the results come back. */
  readonly documents: readonly DocumentBinding[];
  /** The e-service's own text (at most 1000 characters); the citizen approves it composed with the list. */
  readonly signMessage?: SignMessage;
}

const sha256Hex = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/**
 * The manifest of a `documents` request, one value a line: "hsm-signing-pipeline/sign-manifest/v1", the
 * number of documents, then for each document in order digestAlgorithm, digest, format (default raw),
 * profile (for cms its default CAdES-B-B, empty for raw) and the lower-case hex SHA-256 of the UTF-8 of
 * its name (empty when it has none).
 */
export function manifestLines(documents: readonly DocumentBinding[]): string[] {
  const lines = ['hsm-signing-pipeline/sign-manifest/v1', String(documents.length)];
  for (const document of documents) {
    const format = document.format ?? 'raw';
    lines.push(
      document.digestAlgorithm,
      document.digest,
      format,
      format === 'cms' ? (document.profile ?? 'CAdES-B-B') : '',
      document.name === undefined ? '' : sha256Hex(document.name),
    );
  }
  return lines;
}

/** base64url of the SHA-256 of the manifest's lines joined by "\n" (43 characters): the login's `tbs_data`. */
export function manifestHash(documents: readonly DocumentBinding[]): string {
  return createHash('sha256').update(manifestLines(documents).join('\n'), 'utf8').digest('base64url');
}

/**
 * ASCII punctuation: CommonMark lets a backslash escape each of these (and only these), and any of them
 * may start markup (`&` an entity, `<` an autolink, `=` and `-` a heading's underline, `.` and `)` an
 * ordered list's marker after digits, ...).
 */
const ASCII_PUNCTUATION = /[!-/:-@[-`{-~]/g;
/** White space at either end of a name: a Markdown parser strips it there (and indents code with it). */
const EDGE_WHITE_SPACE = /^\s+|\s+$/gu;

/**
 * A document's name as CommonMark text that shows exactly the name (as the service composes it): ASCII punctuation backslash-escaped,
 * white space at either end as numeric character references.
 */
function markdownLiteral(name: string): string {
  return name
    .replace(ASCII_PUNCTUATION, (c) => `\\${c}`)
    .replace(EDGE_WHITE_SPACE, (run) =>
      [...run].map((c) => `&#x${c.codePointAt(0)!.toString(16).toUpperCase()};`).join(''),
    );
}

/**
 * The text the citizen approves for several documents: the e-service's text, an empty line,
 * "Documents (N):" and one numbered line per document, its name (as CommonMark text that shows
 * exactly the name in a text/markdown message) or "unnamed (<digestAlgorithm> <first 16 characters of the digest>...)".
 */
export function composeSignMessage(
  message: SignMessage,
  documents: readonly DocumentBinding[],
): Required<SignMessage> {
  const mimeType = message.mimeType ?? 'text/plain';
  const label = (document: DocumentBinding): string =>
    document.name === undefined
      ? `unnamed (${document.digestAlgorithm} ${document.digest.slice(0, 16)}...)`
      : mimeType === 'text/markdown'
        ? markdownLiteral(document.name)
        : document.name;
  const lines = documents.map((document, i) => `${i + 1}. ${label(document)}`);
  return { text: `${message.text}\n\nDocuments (${documents.length}):\n${lines.join('\n')}`, mimeType };
}

/**
 * The nonce of a `documents` request (v3): base64url of the SHA-256 of these lines joined by "\n":
 * "hsm-signing-pipeline/sign-request/v3", the request id in lower case, keyType, signatureAlgorithm,
 * the manifest hash, and with a sign message the hash of the composed message (composeSignMessage).
 */
export function documentsRequestNonce(binding: DocumentsBinding): string {
  const lines = [
    'hsm-signing-pipeline/sign-request/v3',
    binding.requestId.toLowerCase(),
    binding.keyType,
    binding.signatureAlgorithm,
    manifestHash(binding.documents),
  ];
  if (binding.signMessage) {
    lines.push(signMessageHash(composeSignMessage(binding.signMessage, binding.documents)));
  }
  return createHash('sha256').update(lines.join('\n')).digest('base64url');
}

/** The request was not sent: it breaks a rule the service would refuse it for. */
export class DocumentsRequestError extends Error {
  public override readonly name = 'DocumentsRequestError';
  public readonly code = 'VALIDATION_FAILED';
}

/**
 * The body of a `documents` sign request: every document with its defaults written out (format, and
 * for cms profile and level), as the manifest binds them. Refuses what the service would: no document
 * or more than MAX_DOCUMENTS, a name that is empty, longer than 120 characters or not on one line, a
 * composed message longer than MAX_COMPOSED_SIGN_MESSAGE_LENGTH.
 */
export function documentsRequest(
  binding: DocumentsBinding,
  identityAssertion: string,
): SignDocumentsRequestBody {
  const { documents } = binding;
  if (documents.length < 1 || documents.length > MAX_DOCUMENTS) {
    throw new DocumentsRequestError(`documents must hold 1 to ${MAX_DOCUMENTS} entries`);
  }
  for (const document of documents) {
    const name = document.name;
    if (name !== undefined && ([...name].length < 1 || [...name].length > 120 || /[\t\n]/.test(name))) {
      throw new DocumentsRequestError('a document name is 1 to 120 characters on one line');
    }
  }
  if (
    binding.signMessage &&
    [...composeSignMessage(binding.signMessage, documents).text].length > MAX_COMPOSED_SIGN_MESSAGE_LENGTH
  ) {
    throw new DocumentsRequestError(
      `the sign message with the list of documents is longer than ${MAX_COMPOSED_SIGN_MESSAGE_LENGTH} characters`,
    );
  }
  return {
    requestId: binding.requestId,
    keyType: binding.keyType,
    signatureAlgorithm: binding.signatureAlgorithm,
    documents: documents.map((document) => {
      const format = document.format ?? 'raw';
      return {
        ...(document.name === undefined ? {} : { name: document.name }),
        digest: document.digest,
        digestAlgorithm: document.digestAlgorithm,
        format,
        ...(format === 'cms'
          ? {
              profile: document.profile ?? 'CAdES-B-B',
              level: document.level ?? 'B-LT',
              ...(document.minimumLevel ? { minimumLevel: document.minimumLevel } : {}),
            }
          : {}),
      };
    }),
    ...(binding.signMessage
      ? {
          signMessage: {
            text: binding.signMessage.text,
            mimeType: binding.signMessage.mimeType ?? 'text/plain',
          },
        }
      : {}),
    identityAssertion,
  };
}

/** The signature algorithm the service picks when a request names none (the first that fits the key). */
export function defaultSignatureAlgorithm(keyType: KeyType): SignatureAlgorithm {
  return keyType.startsWith('EC-') ? 'ECDSA' : 'RSASSA-PKCS1-v1_5';
}

/** A client's request-object signing key (registered with the service as a JWKS). */
export interface ClientSigningKey {
  readonly privateKey: CryptoKey | KeyObject | JWK | Uint8Array;
  readonly kid: string;
  readonly alg: 'ES256' | 'ES384' | 'RS256' | 'PS256';
}

/** The JWS type the service requires of a request object. */
export const REQUEST_OBJECT_TYPE = 'sign-request+jwt';

/**
 * A request object: the client (`iss`, its API client id) vouches that `signer` is the person signing
 * this binding. Only for clients whose keys the service registered (IDENTITY_CLIENT_KEYS); send it as
 * `identityAssertion`. Valid for `ttlSeconds` (the service refuses long-lived ones).
 */
export function signRequestObject(options: {
  readonly key: ClientSigningKey;
  readonly clientId: string;
  /** The service's identifier (IDENTITY_CLIENT_ID), default `signing-service`. */
  readonly audience?: string;
  readonly binding: SignBinding;
  readonly signer: {
    readonly commonName: string;
    readonly givenName: string;
    readonly surname: string;
    readonly serialNumber: string;
    readonly country: string;
  };
  readonly ttlSeconds?: number;
}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ nonce: signRequestNonce(options.binding), signer: options.signer })
    .setProtectedHeader({ alg: options.key.alg, kid: options.key.kid, typ: REQUEST_OBJECT_TYPE })
    .setIssuer(options.clientId)
    .setAudience(options.audience ?? 'signing-service')
    .setIssuedAt(now)
    .setExpirationTime(now + (options.ttlSeconds ?? 300))
    .setJti(randomUUID())
    .sign(options.key.privateKey);
}

export interface SignRequestBody extends SignBinding {
  /** The ID token, or this client's request object. */
  readonly identityAssertion: string;
}

/** A sign request for several documents under one login (documentsRequest builds it). */
export interface SignDocumentsRequestBody {
  readonly requestId: string;
  readonly keyType: KeyType;
  readonly signatureAlgorithm: SignatureAlgorithm;
  readonly documents: readonly DocumentBinding[];
  readonly signMessage?: SignMessage;
  readonly identityAssertion: string;
}

/** One document's result in a `documents` request, in input order. */
export interface DocumentResult {
  readonly index: number;
  readonly name?: string;
  readonly format: 'raw' | 'cms';
  readonly signature?: string;
  readonly cms?: string;
  readonly reachedLevel?: SignatureLevel;
  readonly validationData?: { certificates: string[]; ocspResponses: string[]; crls: string[] };
}

/** What GET /v1/sign-requests/{id} answers (the fields a client uses). */
export interface SignRequestResult {
  readonly id: string;
  readonly status: 'received' | 'signing' | 'signed' | 'failed';
  readonly signature?: string;
  readonly cms?: string;
  readonly certificate?: string;
  readonly certificateSerial?: string;
  readonly chain?: string[];
  /** For `cms`: the level the service reached, and from B-LT the validation data (base64 DER). */
  readonly reachedLevel?: SignatureLevel;
  readonly validationData?: { certificates: string[]; ocspResponses: string[]; crls: string[] };
  /** The hash of the sign message the citizen approved, when the request had one. */
  readonly signMessageHash?: string;
  /** For a `documents` request: one result per document, in input order, all under `certificate`. */
  readonly documents?: readonly DocumentResult[];
  readonly error?: { code: string; message: string };
}

/** The API refused (a 4xx/5xx with its machine-readable code). */
export class SigningApiError extends Error {
  public override readonly name = 'SigningApiError';
  public constructor(
    public readonly status: number,
    public readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface SigningClientOptions {
  /** e.g. http://127.0.0.1:8080/v1 */
  readonly apiUrl: string;
  /** The e-service's API key: its usage plan entry (throttle, quota). */
  readonly apiKey: string;
  /**
   * The e-service's own credentials (its IAM principal's on AWS, the runner's for its client locally):
   * every call is signed with them (SigV4), and the API refuses a key that is not the signer's.
   */
  readonly credentials?: SigV4Credentials;
}

export class SigningClient {
  public constructor(private readonly options: SigningClientOptions) {}

  /** A fresh request id; the nonce for the login is derived from it and the digest. */
  public static newRequestId(): string {
    return randomUUID();
  }

  public async submit(
    body: SignRequestBody | SignDocumentsRequestBody,
  ): Promise<{ id: string; status: string }> {
    return this.call('POST', '/sign-requests', body) as Promise<{ id: string; status: string }>;
  }

  /**
   * Submits and waits for the result in the same call (`POST ?wait=N`); when the request has not ended
   * within that wait (202), long-polls it like `result` until `timeoutSeconds` passed.
   */
  public async submitAndWait(
    body: SignRequestBody | SignDocumentsRequestBody,
    timeoutSeconds = 30,
  ): Promise<SignRequestResult> {
    const deadline = Date.now() + timeoutSeconds * 1000;
    const wait = Math.max(0, Math.min(20, timeoutSeconds));
    const submitted = (await this.call('POST', `/sign-requests?wait=${wait}`, body)) as SignRequestResult;
    if (submitted.status === 'signed' || submitted.status === 'failed') return submitted;
    return this.result(submitted.id, Math.max(0, Math.ceil((deadline - Date.now()) / 1000)));
  }

  /** Long-polls until the request is signed or failed (or `timeoutSeconds` passed). */
  public async result(id: string, timeoutSeconds = 30): Promise<SignRequestResult> {
    const deadline = Date.now() + timeoutSeconds * 1000;
    for (;;) {
      const wait = Math.max(0, Math.min(20, Math.ceil((deadline - Date.now()) / 1000)));
      const result = (await this.call('GET', `/sign-requests/${id}?wait=${wait}`)) as SignRequestResult;
      if (result.status === 'signed' || result.status === 'failed' || Date.now() >= deadline) return result;
    }
  }

  public async revoke(id: string, reason: string): Promise<Record<string, unknown>> {
    return this.call('POST', `/sign-requests/${id}/revocation`, { reason }) as Promise<
      Record<string, unknown>
    >;
  }

  private async call(method: string, path: string, body?: unknown): Promise<unknown> {
    const url = `${this.options.apiUrl}${path}`;
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = {
      'x-api-key': this.options.apiKey,
      ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
    };
    if (this.options.credentials) {
      const signature = await signApiRequest(this.options.credentials, {
        url,
        method,
        headers,
        body: payload,
      });
      Object.assign(headers, signature);
    }
    const res = await fetch(url, { method, headers, body: payload });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new SigningApiError(res.status, 'NOT_JSON', `the API answered ${res.status} without JSON`);
    }
    if (!res.ok) {
      const error = (parsed as { error?: { code?: string; message?: string } }).error;
      throw new SigningApiError(res.status, error?.code ?? 'UNKNOWN', error?.message ?? `HTTP ${res.status}`);
    }
    return parsed;
  }
}
