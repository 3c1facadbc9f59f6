/**
 * Signing a document end to end from an e-service: the digest (of the file, or of a PDF's byte ranges),
 * a fresh request id, the citizen's login bound to both (and to the sign message the identity provider
 * shows, when there is one), the sign request (format cms), the result, and the container: a detached
 * CAdES `.p7s`, or the PDF with the CMS in its signature field (PAdES). signDocument does it in one call
 * for a login that returns the token; a web e-service, whose login is a browser round trip, calls
 * prepareSigning before it redirects and completeSigning on the callback.
 */
import { createHash } from 'node:crypto';
import { addArchiveTimeStamp } from './cades-archive';
import { addDocumentSecurityStore, addDocumentTimeStamp } from './pdf-long-term';
import { preparePdfSignature } from './pdf-signature';
import {
  SigningClient,
  defaultSignatureAlgorithm,
  signRequestNonce,
  type SignBinding,
  type SignMessage,
  type DigestAlgorithm,
  type KeyType,
  type SignRequestResult,
  type SignatureAlgorithm,
  type SignatureLevel,
} from './signing-client';

/** What the login is for, beside its nonce: what the identity provider shows the citizen. */
export interface LoginRequest {
  /** The digest (standard base64): the signature extension's `tbs_data`. */
  readonly tbsData: string;
  readonly signMessage?: SignMessage;
  readonly documentName?: string;
}

export interface SignDocumentOptions extends PrepareSigningOptions {
  readonly client: SigningClient;
  /**
   * The citizen's login at the identity provider, returning the ID token. It must send `nonce` in the
   * authorization request (the token then carries it): that binds the login to this document and request.
   * With a sign message, it must ask for a signature (the signature extension) with `request`.
   */
  readonly login: (nonce: string, request: LoginRequest) => Promise<string>;
  readonly timeoutSeconds?: number;
}

export interface PrepareSigningOptions {
  readonly document: Buffer;
  /** Sign as PAdES (an incremental update of the PDF) instead of a detached CAdES signature. */
  readonly pdf?: boolean;
  readonly keyType?: KeyType;
  readonly signatureAlgorithm?: SignatureAlgorithm;
  readonly digestAlgorithm?: DigestAlgorithm;
  /** PAdES: the time written into the signature dictionary (/M). */
  readonly signingTime?: Date;
  /**
   * The AdES level (default B-LT); B-LTA adds, from `tsaUrl`, a document time-stamp (PDF) or an archive
   * time-stamp v3 over the content and the signature with its validation data (CAdES).
   */
  readonly level?: SignatureLevel;
  readonly minimumLevel?: SignatureLevel;
  /** The TSA for B-LTA's time-stamp (the service's: `<PKI base URL>/tsa`). */
  readonly tsaUrl?: string;
  /** What the citizen is shown and approves at the identity provider (only its hash reaches the service). */
  readonly signMessage?: SignMessage;
  /** The document's name, for the identity provider's signature page. */
  readonly documentName?: string;
}

/** A signature under way: the request to log in for and to submit, and how to finish the document. */
export interface PreparedSigning {
  /** What the sign request sends beside the identity assertion (level included). */
  readonly binding: SignBinding;
  /** The login's nonce. */
  readonly nonce: string;
  readonly login: LoginRequest;
  /** The `.p7s` (the CMS itself) or the signed PDF (with its validation data), with B-LTA's time-stamp. */
  finish(result: SignRequestResult): Promise<{ output: Buffer; level: SignatureLevel }>;
}

export interface SignedDocument {
  /** The `.p7s` (DER) or the signed PDF. */
  readonly output: Buffer;
  /** The level the output reached (B-LTA once the document or archive time-stamp is in). */
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

/** Checks and digests the document and fixes the request; nobody has logged in yet. */
export async function prepareSigning(options: PrepareSigningOptions): Promise<PreparedSigning> {
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
  const level = options.level ?? 'B-LT';
  if (level === 'B-LTA' && !options.tsaUrl) {
    throw new SigningFailedError('TSA_REQUIRED', 'B-LTA needs the URL of a TSA for its time-stamp');
  }
  const keyType = options.keyType ?? 'EC-P256';
  const binding: SignBinding = {
    requestId: SigningClient.newRequestId(),
    digest,
    digestAlgorithm,
    keyType,
    signatureAlgorithm: options.signatureAlgorithm ?? defaultSignatureAlgorithm(keyType),
    format: 'cms',
    profile: prepared ? 'PAdES-B-B' : 'CAdES-B-B',
    level,
    ...(options.minimumLevel ? { minimumLevel: options.minimumLevel } : {}),
    ...(options.signMessage ? { signMessage: options.signMessage } : {}),
  };
  return {
    binding,
    nonce: signRequestNonce(binding),
    login: {
      tbsData: digest,
      ...(options.signMessage ? { signMessage: options.signMessage } : {}),
      ...(options.documentName ? { documentName: options.documentName } : {}),
    },
    finish: async (result) => {
      const cms = Buffer.from(result.cms!, 'base64');
      const reached = result.reachedLevel ?? 'B-B';
      if (!prepared) {
        // CAdES: the archive time-stamp covers the content, which only the client has.
        if (level === 'B-LTA' && reached === 'B-LT') {
          return {
            output: await addArchiveTimeStamp(cms, options.document, options.tsaUrl!),
            level: 'B-LTA',
          };
        }
        return { output: cms, level: reached };
      }
      let output = prepared.embed(cms);
      // PAdES: the validation data goes into the PDF's DSS; B-LTA time-stamps the whole file after it.
      if (result.validationData) output = await addDocumentSecurityStore(output, cms, result.validationData);
      if (level === 'B-LTA' && reached === 'B-LT') {
        return { output: await addDocumentTimeStamp(output, options.tsaUrl!), level: 'B-LTA' };
      }
      return { output, level: reached };
    },
  };
}

/** Submits the prepared request with the login's ID token, waits for the result and finishes the document. */
export async function completeSigning(
  client: SigningClient,
  prepared: PreparedSigning,
  identityAssertion: string,
  timeoutSeconds = 60,
): Promise<SignedDocument> {
  const requestId = prepared.binding.requestId;
  const result = await client.submitAndWait({ ...prepared.binding, identityAssertion }, timeoutSeconds);
  if (result.status !== 'signed' || !result.cms) {
    throw new SigningFailedError(
      result.error?.code ?? 'NOT_SIGNED',
      result.error?.message ?? `the request is still ${result.status}`,
    );
  }
  return { ...(await prepared.finish(result)), requestId, result };
}

export async function signDocument(options: SignDocumentOptions): Promise<SignedDocument> {
  const prepared = await prepareSigning(options);
  const identityAssertion = await options.login(prepared.nonce, prepared.login);
  return completeSigning(options.client, prepared, identityAssertion, options.timeoutSeconds);
}
