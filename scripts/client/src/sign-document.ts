/**
 * Signing a document end to end from an e-service: the digest (of the file, or of a PDF's byte ranges),
 * a fresh request id, the citizen's login bound to both, the sign request (format cms), the result, and
 * the container: a detached CAdES `.p7s`, or the PDF with the CMS in its signature field (PAdES).
 */
import { createHash } from 'node:crypto';
import { addDocumentSecurityStore, addDocumentTimeStamp } from './pdf-long-term';
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
  type SignatureLevel,
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
  /** The AdES level (default B-LT); B-LTA (PDF only) adds a document time-stamp from `tsaUrl`. */
  readonly level?: SignatureLevel;
  readonly minimumLevel?: SignatureLevel;
  /** The TSA for B-LTA's document time-stamp (the service's: `<PKI base URL>/tsa`). */
  readonly tsaUrl?: string;
  readonly timeoutSeconds?: number;
}

export interface SignedDocument {
  /** The `.p7s` (DER) or the signed PDF. */
  readonly output: Buffer;
  /** The level the output reached (B-LTA once the document time-stamp is in). */
  readonly level: SignatureLevel;
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
  const level = options.level ?? 'B-LT';
  if (level === 'B-LTA' && !prepared) {
    throw new SigningFailedError('LEVEL_UNSUPPORTED', 'B-LTA is for PDFs (a document time-stamp)');
  }
  if (level === 'B-LTA' && !options.tsaUrl) {
    throw new SigningFailedError('TSA_REQUIRED', 'B-LTA needs the URL of a TSA for the document time-stamp');
  }
  const requestId = binding.requestId;
  const identityAssertion = await options.login(signRequestNonce(binding));
  await options.client.submit({
    ...binding,
    level,
    ...(options.minimumLevel ? { minimumLevel: options.minimumLevel } : {}),
    identityAssertion,
  });
  const result = await options.client.result(requestId, options.timeoutSeconds ?? 60);
  if (result.status !== 'signed' || !result.cms) {
    throw new SigningFailedError(
      result.error?.code ?? 'NOT_SIGNED',
      result.error?.message ?? `the request is still ${result.status}`,
    );
  }
  const cms = Buffer.from(result.cms, 'base64');
  const reached = result.reachedLevel ?? 'B-B';
  if (!prepared) return { output: cms, level: reached, requestId, result };
  let output = prepared.embed(cms);
  // PAdES: the validation data goes into the PDF's DSS; B-LTA time-stamps the whole file after it.
  if (result.validationData) output = await addDocumentSecurityStore(output, cms, result.validationData);
  if (level === 'B-LTA' && reached === 'B-LT') {
    output = await addDocumentTimeStamp(output, options.tsaUrl!);
    return { output, level: 'B-LTA', requestId, result };
  }
  return { output, level: reached, requestId, result };
}
