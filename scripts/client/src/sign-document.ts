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
  composeSignMessage,
  defaultSignatureAlgorithm,
  documentsRequest,
  documentsRequestNonce,
  manifestHash,
  signRequestNonce,
  type DocumentBinding,
  type DocumentsBinding,
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
  /**
   * The signature extension's `tbs_data`: the digest (standard base64), or for several documents the
   * manifest hash (base64url).
   */
  readonly tbsData: string;
  /** What the provider shows: the sign message, for several documents composed with their list. */
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
  finish(result: CmsResult): Promise<{ output: Buffer; level: SignatureLevel }>;
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

/** One document checked and digested, and how to finish it from its result. */
interface PreparedDocument {
  readonly entry: DocumentBinding & { readonly format: 'cms'; readonly level: SignatureLevel };
  finish(result: CmsResult): Promise<{ output: Buffer; level: SignatureLevel }>;
}

/** What finishing a document needs of its result (a single request's, or one entry of `documents`). */
type CmsResult = Pick<SignRequestResult, 'cms' | 'reachedLevel' | 'validationData'>;

async function prepareDocument(
  document: Buffer,
  options: Pick<
    PrepareSigningOptions,
    'pdf' | 'digestAlgorithm' | 'signingTime' | 'level' | 'minimumLevel' | 'tsaUrl'
  > & { readonly name?: string },
): Promise<PreparedDocument> {
  const digestAlgorithm = options.digestAlgorithm ?? 'SHA-256';
  // A PDF is checked (and prepared) before anyone is asked to log in.
  const prepared = options.pdf
    ? await preparePdfSignature(document, { signingTime: options.signingTime ?? new Date() })
    : undefined;
  const digest = (
    prepared
      ? prepared.digest(HASHES[digestAlgorithm])
      : createHash(HASHES[digestAlgorithm]).update(document).digest()
  ).toString('base64');
  const level = options.level ?? 'B-LT';
  if (level === 'B-LTA' && !options.tsaUrl) {
    throw new SigningFailedError('TSA_REQUIRED', 'B-LTA needs the URL of a TSA for its time-stamp');
  }
  return {
    entry: {
      ...(options.name === undefined ? {} : { name: options.name }),
      digest,
      digestAlgorithm,
      format: 'cms',
      profile: prepared ? 'PAdES-B-B' : 'CAdES-B-B',
      level,
      ...(options.minimumLevel ? { minimumLevel: options.minimumLevel } : {}),
    },
    finish: async (result) => {
      if (!result.cms) throw new SigningFailedError('NOT_SIGNED', 'the result has no CMS signature');
      const cms = Buffer.from(result.cms, 'base64');
      const reached = result.reachedLevel ?? 'B-B';
      if (!prepared) {
        // CAdES: the archive time-stamp covers the content, which only the client has.
        if (level === 'B-LTA' && reached === 'B-LT') {
          return { output: await addArchiveTimeStamp(cms, document, options.tsaUrl!), level: 'B-LTA' };
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

/** Checks and digests the document and fixes the request; nobody has logged in yet. */
export async function prepareSigning(options: PrepareSigningOptions): Promise<PreparedSigning> {
  const { entry, finish } = await prepareDocument(options.document, options);
  const keyType = options.keyType ?? 'EC-P256';
  const binding: SignBinding = {
    requestId: SigningClient.newRequestId(),
    digest: entry.digest,
    digestAlgorithm: entry.digestAlgorithm,
    keyType,
    signatureAlgorithm: options.signatureAlgorithm ?? defaultSignatureAlgorithm(keyType),
    format: 'cms',
    profile: entry.profile,
    level: entry.level,
    ...(entry.minimumLevel ? { minimumLevel: entry.minimumLevel } : {}),
    ...(options.signMessage ? { signMessage: options.signMessage } : {}),
  };
  return {
    binding,
    nonce: signRequestNonce(binding),
    login: {
      tbsData: entry.digest,
      ...(options.signMessage ? { signMessage: options.signMessage } : {}),
      ...(options.documentName ? { documentName: options.documentName } : {}),
    },
    finish,
  };
}

/** One file of a `documents` request. */
export interface DocumentInput {
  readonly document: Buffer;
  /** Shown to the citizen in the list of documents (1 to 120 characters, one line). */
  readonly name?: string;
  /** Sign as PAdES inside the PDF instead of a detached CAdES signature. */
  readonly pdf?: boolean;
  /** This document's level (default the request's `level`, else B-LT). */
  readonly level?: SignatureLevel;
  readonly minimumLevel?: SignatureLevel;
}

export interface PrepareDocumentsOptions extends Omit<
  PrepareSigningOptions,
  'document' | 'pdf' | 'documentName'
> {
  readonly documents: readonly DocumentInput[];
}

/** Several documents under way: one request, one login, one key and certificate. */
export interface PreparedDocumentsSigning {
  readonly binding: DocumentsBinding;
  /** The login's nonce (v3: bound to the manifest and the composed message). */
  readonly nonce: string;
  /** tbs_data the manifest hash; the sign message the composed one (the list of documents). */
  readonly login: LoginRequest;
  /** Each document's output from the result's `documents`, in input order. */
  finish(result: SignRequestResult): Promise<Array<{ output: Buffer; level: SignatureLevel }>>;
}

export interface SignedDocuments {
  /** In input order: the `.p7s` (DER) or the signed PDF, and the level it reached. */
  readonly outputs: ReadonlyArray<{
    readonly name?: string;
    readonly output: Buffer;
    readonly level: SignatureLevel;
  }>;
  readonly requestId: string;
  readonly result: SignRequestResult;
}

/** Checks and digests every document and fixes the one request for all of them; nobody has logged in yet. */
export async function prepareSigningDocuments(
  options: PrepareDocumentsOptions,
): Promise<PreparedDocumentsSigning> {
  const prepared = await Promise.all(
    options.documents.map((input) =>
      prepareDocument(input.document, {
        ...options,
        pdf: input.pdf,
        level: input.level ?? options.level,
        minimumLevel: input.minimumLevel ?? options.minimumLevel,
        name: input.name,
      }),
    ),
  );
  const keyType = options.keyType ?? 'EC-P256';
  const binding: DocumentsBinding = {
    requestId: SigningClient.newRequestId(),
    keyType,
    signatureAlgorithm: options.signatureAlgorithm ?? defaultSignatureAlgorithm(keyType),
    documents: prepared.map((p) => p.entry),
    ...(options.signMessage ? { signMessage: options.signMessage } : {}),
  };
  // Refused here, before anyone logs in, what the service would refuse.
  documentsRequest(binding, '');
  return {
    binding,
    nonce: documentsRequestNonce(binding),
    login: {
      tbsData: manifestHash(binding.documents),
      ...(options.signMessage
        ? { signMessage: composeSignMessage(options.signMessage, binding.documents) }
        : {}),
    },
    finish: async (result) => {
      const results = result.documents ?? [];
      if (results.length !== prepared.length) {
        throw new SigningFailedError(
          'NOT_SIGNED',
          `the result has ${results.length} documents, the request ${prepared.length}`,
        );
      }
      return Promise.all(prepared.map((p, i) => p.finish(results[i])));
    },
  };
}

/** Submits the prepared `documents` request with the login's ID token, waits, and finishes every document. */
export async function completeSigningDocuments(
  client: SigningClient,
  prepared: PreparedDocumentsSigning,
  identityAssertion: string,
  timeoutSeconds = 60,
): Promise<SignedDocuments> {
  const requestId = prepared.binding.requestId;
  const result = await client.submitAndWait(
    documentsRequest(prepared.binding, identityAssertion),
    timeoutSeconds,
  );
  if (result.status !== 'signed') {
    throw new SigningFailedError(
      result.error?.code ?? 'NOT_SIGNED',
      result.error?.message ?? `the request is still ${result.status}`,
    );
  }
  const outputs = await prepared.finish(result);
  return {
    outputs: outputs.map((o, i) => {
      const name = prepared.binding.documents[i].name;
      return name === undefined ? o : { name, ...o };
    }),
    requestId,
    result,
  };
}

/** Several documents under one login: prepare, log in once, submit one request, finish each document. */
export async function signDocuments(
  options: PrepareDocumentsOptions & Pick<SignDocumentOptions, 'client' | 'login' | 'timeoutSeconds'>,
): Promise<SignedDocuments> {
  const prepared = await prepareSigningDocuments(options);
  const identityAssertion = await options.login(prepared.nonce, prepared.login);
  return completeSigningDocuments(options.client, prepared, identityAssertion, options.timeoutSeconds);
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
