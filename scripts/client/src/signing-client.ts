/**
 * The signing service's API as an e-service calls it: pick a request id, compute the nonce that binds the
 * citizen's login to this request and this document, get the ID token from the identity provider (see
 * oidc-login.ts), submit, and wait for the result. No dependency on the service's code but the nonce rule,
 * which is re-stated here so an e-service can copy this file alone.
 */
import { createHash, randomUUID } from 'node:crypto';

export type DigestAlgorithm = 'SHA-256' | 'SHA-384' | 'SHA-512';
export type KeyType = 'RSA-2048' | 'RSA-3072' | 'RSA-4096' | 'EC-P256' | 'EC-P384';
export type SignatureAlgorithm = 'RSASSA-PKCS1-v1_5' | 'RSASSA-PSS' | 'ECDSA';

/**
 * The `nonce` to send in the authorization request (and that the ID token then carries):
 * base64url(SHA-256("hsm-signing-pipeline/sign-request/v1\n" + requestId + "\n" + digestAlgorithm + "\n"
 * + digest)), with the digest in standard base64 exactly as it is sent in the sign request.
 */
export function signRequestNonce(
  requestId: string,
  digestAlgorithm: DigestAlgorithm,
  digest: string,
): string {
  return createHash('sha256')
    .update(
      ['hsm-signing-pipeline/sign-request/v1', requestId.toLowerCase(), digestAlgorithm, digest].join('\n'),
    )
    .digest('base64url');
}

export interface SignRequestBody {
  readonly requestId: string;
  readonly digest: string;
  readonly digestAlgorithm: DigestAlgorithm;
  readonly keyType?: KeyType;
  readonly signatureAlgorithm?: SignatureAlgorithm;
  readonly format?: 'raw' | 'cms';
  readonly profile?: 'CAdES-B-B' | 'PAdES-B-B';
  readonly identityAssertion: string;
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
  /** The e-service's API key (locally; on AWS the caller signs with SigV4 instead). */
  readonly apiKey: string;
}

export class SigningClient {
  public constructor(private readonly options: SigningClientOptions) {}

  /** A fresh request id; the nonce for the login is derived from it and the digest. */
  public static newRequestId(): string {
    return randomUUID();
  }

  public async submit(body: SignRequestBody): Promise<{ id: string; status: string }> {
    return this.call('POST', '/sign-requests', body) as Promise<{ id: string; status: string }>;
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
    const res = await fetch(`${this.options.apiUrl}${path}`, {
      method,
      headers: {
        'x-api-key': this.options.apiKey,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
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
