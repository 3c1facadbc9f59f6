/**
 * Signing a document end to end from an e-service: the digest (of the file, or of a PDF's byte ranges),
 * a fresh request id, the citizen's login bound to both, the sign request (format cms), the result, and
 * the container: a detached CAdES `.p7s`, or the PDF with the CMS in its signature field (PAdES).
 */
import { createHash } from 'node:crypto';
import { preparePdfSignature } from './pdf-signature';
import {
  SigningClient,
  defaultSignatureAlgorithm,
  signRequestNonce,
  type SignBinding,
  type DigestAlgorithm,
  type KeyType,
  type SignRequestResult,
  type SignatureAlgorithm,
} from './signing-client';

export interface SignDocumentOptions {
  readonly client: SigningClient;
  /**
   * The citizen's login at the identity provider, returning the ID token. It must send `nonce` in the
   * authorization request (the token then carries it): that binds the login to this document and request.
   */
  readonly login: (nonce: string) => Promise<string>;
  readonly document: Buffer;
  /** Sign as PAdES (an incremental update of the PDF) instead of a detached CAdES signature. */
  readonly pdf?: boolean;
  readonly keyType?: KeyType;
  readonly signatureAlgorithm?: SignatureAlgorithm;
  readonly digestAlgorithm?: DigestAlgorithm;
  /** PAdES: the time written into the signature dictionary (/M). */
  readonly signingTime?: Date;
  readonly timeoutSeconds?: number;
}

export interface SignedDocument {
  /** The `.p7s` (DER) or the signed PDF. */
  readonly output: Buffer;
  readonly requestId: string;
  readonly result: SignRequestResult;
}

/** The service ended the request without a signature (the result's error code says why). */
export class SigningFailedError extends Error {
  public override readonly name = 'SigningFailedError';
  public constructor(
    public readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const HASHES: Readonly<Record<DigestAlgorithm, 'sha256' | 'sha384' | 'sha512'>> = {
  'SHA-256': 'sha256',
  'SHA-384': 'sha384',
  'SHA-512': 'sha512',
};

export async function signDocument(options: SignDocumentOptions): Promise<SignedDocument> {
  const digestAlgorithm = options.digestAlgorithm ?? 'SHA-256';
  // A PDF is checked (and prepared) before anyone is asked to log in.
  const prepared = options.pdf
    ? await preparePdfSignature(options.document, { signingTime: options.signingTime ?? new Date() })
    : undefined;
  const digest = (
    prepared
      ? prepared.digest(HASHES[digestAlgorithm])
      : createHash(HASHES[digestAlgorithm]).update(options.document).digest()
  ).toString('base64');
  const keyType = options.keyType ?? 'EC-P256';
  const binding: SignBinding = {
    requestId: SigningClient.newRequestId(),
    digest,
    digestAlgorithm,
    keyType,
    signatureAlgorithm: options.signatureAlgorithm ?? defaultSignatureAlgorithm(keyType),
    format: 'cms',
    profile: prepared ? 'PAdES-B-B' : 'CAdES-B-B',
  };
  const requestId = binding.requestId;
  const identityAssertion = await options.login(signRequestNonce(binding));
  await options.client.submit({ ...binding, identityAssertion });
  const result = await options.client.result(requestId, options.timeoutSeconds ?? 60);
  if (result.status !== 'signed' || !result.cms) {
    throw new SigningFailedError(
      result.error?.code ?? 'NOT_SIGNED',
      result.error?.message ?? `the request is still ${result.status}`,
    );
  }
  const cms = Buffer.from(result.cms, 'base64');
  return { output: prepared ? prepared.embed(cms) : cms, requestId, result };
}
