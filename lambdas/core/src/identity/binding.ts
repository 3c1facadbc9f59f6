import { createHash } from 'node:crypto';
import type { DigestAlgorithm, KeyType, SignatureAlgorithm } from '../shared/algorithms';
import type { AdesProfile, DocumentFormat, SignatureFormat } from '../shared/formats';

/** Versioned so the derivation can change without an old nonce matching a new request. */
export const BINDING_CONTEXT = 'hsm-signing-pipeline/sign-request/v2';

/**
 * What one login (or one trusted client's request object) authorises: signing this digest under this
 * request id, with this key type and algorithm, in this format and profile; nothing else. The CA
 * recomputes it from what the signer is about to sign, so a request record changed after the API
 * accepted it no longer matches the assertion.
 */
export interface AssertionBinding {
  readonly requestId: string;
  readonly digestAlgorithm: DigestAlgorithm;
  /** The digest as the client sends it: standard base64. */
  readonly digest: string;
  readonly keyType: KeyType;
  readonly signatureAlgorithm: SignatureAlgorithm;
  readonly format: SignatureFormat;
  /** For `cms` only. */
  readonly profile?: AdesProfile;
  /**
   * When the request has a sign message: its hash (signMessageHash, lower-case hex). The login then
   * authorises this message too, and the assertion must attest that it was displayed (approval.ts).
   */
  readonly signMessageHash?: string;
  /**
   * The login approved the digest in any format the service offers (a CSC client names the format when
   * it signs, after the login): format and profile are not bound (FORMAT_OPEN, and an empty profile line).
   */
  readonly formatOpen?: true;
  /**
   * The request signs with the key of this one-time credential (its creating request's id), certified
   * before (CredentialBinding), instead of a fresh pool key: a last line `credential:<id>`.
   */
  readonly credentialId?: string;
}

/** The format line of a binding whose login approved the digests in any format. */
export const FORMAT_OPEN = '*';

/**
 * The binding's fields in their fixed order, each on its own line (absent: an empty line); the sign
 * message's hash is a ninth line, only when there is one (so a binding without a message is unchanged).
 */
export function bindingLines(binding: AssertionBinding): string[] {
  const lines = [
    BINDING_CONTEXT,
    binding.requestId.toLowerCase(),
    binding.digestAlgorithm,
    binding.digest,
    binding.keyType,
    binding.signatureAlgorithm,
    binding.formatOpen ? FORMAT_OPEN : binding.format,
    binding.formatOpen ? '' : (binding.profile ?? ''),
  ];
  return withTail(lines, binding);
}

/**
 * A binding's optional last lines: the sign message's hash when there is one, then `credential:<id>` when
 * it signs with a one-time credential's key (its creating request id).
 */
function withTail(
  lines: string[],
  tail: { readonly signMessageHash?: string; readonly credentialId?: string },
): string[] {
  return [
    ...lines,
    ...(tail.signMessageHash === undefined ? [] : [tail.signMessageHash]),
    ...(tail.credentialId === undefined ? [] : [`credential:${tail.credentialId.toLowerCase()}`]),
  ];
}

/**
 * The `nonce` an ID token (or request object) must carry to be used for this sign request:
 * base64url(SHA-256 of bindingLines joined by "\n")), 43 characters. The e-service computes it before
 * sending the citizen to the identity provider, which echoes it in the ID token, so one login cannot be
 * replayed for another document, request or way of signing. A ManifestBinding's nonce is v3's
 * (manifestBindingLines), for all its documents at once.
 */
export function assertionNonce(binding: RequestBinding): string {
  const lines = isCredentialBinding(binding)
    ? credentialBindingLines(binding)
    : isManifestBinding(binding)
      ? manifestBindingLines(binding)
      : bindingLines(binding);
  return createHash('sha256').update(lines.join('\n')).digest('base64url');
}

/** The fields of a stored request (values as the API resolved them, defaults applied) its binding reads. */
interface StoredBindingFields {
  readonly id: string;
  readonly digestAlgorithm: DigestAlgorithm;
  readonly digest: string;
  readonly keyType: KeyType;
  readonly signatureAlgorithm: SignatureAlgorithm;
  readonly format?: SignatureFormat;
  readonly profile?: AdesProfile;
  readonly signMessageHash?: string;
  readonly formatOpen?: boolean;
  readonly credential?: CredentialUse;
}

/** A request's part in a one-time credential: creating it, or signing with the key it certified. */
export type CredentialUse = { readonly create: true } | { readonly use: string };

/** The binding a stored single-document request asks for. */
export function bindingOf(request: StoredBindingFields): AssertionBinding {
  const format = request.format ?? 'raw';
  return {
    ...(request.formatOpen ? { formatOpen: true } : {}),
    requestId: request.id,
    digestAlgorithm: request.digestAlgorithm,
    digest: request.digest,
    keyType: request.keyType,
    signatureAlgorithm: request.signatureAlgorithm,
    format,
    ...(format === 'cms' && request.profile ? { profile: request.profile } : {}),
    ...(request.signMessageHash === undefined ? {} : { signMessageHash: request.signMessageHash }),
    ...credentialIdOf(request.credential),
  };
}

function credentialIdOf(credential: CredentialUse | undefined): { credentialId?: string } {
  return credential && 'use' in credential ? { credentialId: credential.use } : {};
}

/** Documents of one request at most (signing/documents.ts). */
export const MAX_DOCUMENTS = 50;
/** Characters (code points) of a document's name. */
export const MAX_DOCUMENT_NAME_LENGTH = 120;

/** The manifest's first line: versioned like the binding. */
export const MANIFEST_CONTEXT = 'hsm-signing-pipeline/sign-manifest/v1';
/** The binding of a request with `documents` (any number, one too). */
export const BINDING_CONTEXT_V3 = 'hsm-signing-pipeline/sign-request/v3';

/** One document as the manifest names it (values as the API resolved them). */
export interface ManifestDocument {
  readonly digestAlgorithm: DigestAlgorithm;
  /** Standard base64, exactly as sent. */
  readonly digest: string;
  readonly format: DocumentFormat;
  /** For `cms` only. */
  readonly profile?: AdesProfile;
  /** Bound by its hash (nameHash); shown to the citizen in the composed sign message. */
  readonly name?: string;
}

/**
 * What one login authorises for a request with `documents`: signing exactly these documents, in this
 * order, each in its format and profile, under this request id with this key type and algorithm (one key
 * and one certificate for all). The CA recomputes the manifest from what the signer is about to sign.
 */
export interface ManifestBinding {
  readonly requestId: string;
  readonly keyType: KeyType;
  readonly signatureAlgorithm: SignatureAlgorithm;
  readonly documents: readonly ManifestDocument[];
  /** As in AssertionBinding: the hash of the composed sign message (composeSignMessage). */
  readonly signMessageHash?: string;
  /** As in AssertionBinding: every document's format and profile unbound. */
  readonly formatOpen?: true;
  /** As in AssertionBinding: the one-time credential whose key signs. */
  readonly credentialId?: string;
}

/** The binding of a one-time credential's creation. */
export const CREDENTIAL_BINDING_CONTEXT = 'hsm-signing-pipeline/one-time-credential/v1';

/**
 * What the login that creates a one-time credential authorises: certifying one key of this type and
 * algorithm for the citizen under this request id, to sign later only what a second login approves
 * (AssertionBinding.credentialId). Nothing is signed under it.
 */
export interface CredentialBinding {
  readonly requestId: string;
  readonly keyType: KeyType;
  readonly signatureAlgorithm: SignatureAlgorithm;
  readonly credential: 'create';
  /** As in AssertionBinding: the hash of the sign message shown at that login. */
  readonly signMessageHash?: string;
}

/** CREDENTIAL_BINDING_CONTEXT, request id (lower case), key type, algorithm, [signMessageHash]. */
export function credentialBindingLines(binding: CredentialBinding): string[] {
  const lines = [
    CREDENTIAL_BINDING_CONTEXT,
    binding.requestId.toLowerCase(),
    binding.keyType,
    binding.signatureAlgorithm,
  ];
  return withTail(lines, binding);
}

/**
 * A credential creation's "digest" (standard base64 SHA-256 of its first four binding lines): the
 * request's `digest` and the approval's `tbs_data`, which nothing signs.
 */
export function credentialDigest(binding: Omit<CredentialBinding, 'signMessageHash'>): string {
  const lines = credentialBindingLines({ ...binding, signMessageHash: undefined });
  return createHash('sha256').update(lines.join('\n')).digest('base64');
}

/** The binding of a request that signs: v2 for a single document, v3 (the manifest) for `documents`. */
export type SigningBinding = AssertionBinding | ManifestBinding;

/** A request's binding: a signing one, or a credential's creation. */
export type RequestBinding = SigningBinding | CredentialBinding;

export function isManifestBinding(binding: RequestBinding): binding is ManifestBinding {
  return (binding as Partial<ManifestBinding>).documents !== undefined;
}

export function isCredentialBinding(binding: RequestBinding): binding is CredentialBinding {
  return (binding as Partial<CredentialBinding>).credential === 'create';
}

const sha256Hex = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/**
 * The manifest: MANIFEST_CONTEXT, the number of documents, then five lines per document in order:
 * digestAlgorithm, digest, format, profile (empty for raw), nameHash (lower-case hex SHA-256 of the UTF-8
 * name; empty without a name). With `formatOpen`, each format line is FORMAT_OPEN and each profile empty.
 */
export function manifestLines(documents: readonly ManifestDocument[], formatOpen = false): string[] {
  return [
    MANIFEST_CONTEXT,
    String(documents.length),
    ...documents.flatMap((d) => [
      d.digestAlgorithm,
      d.digest,
      formatOpen ? FORMAT_OPEN : d.format,
      !formatOpen && d.format === 'cms' ? (d.profile ?? '') : '',
      d.name === undefined ? '' : sha256Hex(d.name),
    ]),
  ];
}

/** base64url(SHA-256 of manifestLines joined by "\n"), 43 characters: the approval's tbs_data. */
export function manifestHash(documents: readonly ManifestDocument[], formatOpen = false): string {
  return createHash('sha256').update(manifestLines(documents, formatOpen).join('\n')).digest('base64url');
}

/** BINDING_CONTEXT_V3, request id (lower case), key type, algorithm, manifestHash, [signMessageHash]. */
export function manifestBindingLines(binding: ManifestBinding): string[] {
  const lines = [
    BINDING_CONTEXT_V3,
    binding.requestId.toLowerCase(),
    binding.keyType,
    binding.signatureAlgorithm,
    manifestHash(binding.documents, binding.formatOpen),
  ];
  return withTail(lines, binding);
}

/**
 * The binding of a stored request: the manifest's for a request with `documents`, bindingOf's otherwise.
 */
export function requestBindingOf(
  request: StoredBindingFields & { readonly documents?: readonly ManifestDocument[] },
): RequestBinding {
  const hash = request.signMessageHash === undefined ? {} : { signMessageHash: request.signMessageHash };
  if (request.credential && 'create' in request.credential) {
    return {
      requestId: request.id,
      keyType: request.keyType,
      signatureAlgorithm: request.signatureAlgorithm,
      credential: 'create',
      ...hash,
    };
  }
  if (request.documents !== undefined) {
    return {
      requestId: request.id,
      keyType: request.keyType,
      signatureAlgorithm: request.signatureAlgorithm,
      documents: request.documents.map((d) => ({
        digestAlgorithm: d.digestAlgorithm,
        digest: d.digest,
        format: d.format,
        ...(d.format === 'cms' && d.profile ? { profile: d.profile } : {}),
        ...(d.name === undefined ? {} : { name: d.name }),
      })),
      ...hash,
      ...(request.formatOpen ? { formatOpen: true } : {}),
      ...credentialIdOf(request.credential),
    };
  }
  return bindingOf(request);
}
