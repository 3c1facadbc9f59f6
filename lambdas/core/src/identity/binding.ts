import { createHash } from 'node:crypto';
import type { DigestAlgorithm, KeyType, SignatureAlgorithm } from '../shared/algorithms';
import type { AdesProfile, SignatureFormat } from '../shared/formats';

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
}

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
    binding.format,
    binding.profile ?? '',
  ];
  return binding.signMessageHash === undefined ? lines : [...lines, binding.signMessageHash];
}

/**
 * The `nonce` an ID token (or request object) must carry to be used for this sign request:
 * base64url(SHA-256 of bindingLines joined by "\n")), 43 characters. The e-service computes it before
 * sending the citizen to the identity provider, which echoes it in the ID token, so one login cannot be
 * replayed for another document, request or way of signing.
 */
export function assertionNonce(binding: AssertionBinding): string {
  return createHash('sha256').update(bindingLines(binding).join('\n')).digest('base64url');
}

/** The binding a stored request asks for (values as the API resolved them, defaults applied). */
export function bindingOf(request: {
  readonly id: string;
  readonly digestAlgorithm: DigestAlgorithm;
  readonly digest: string;
  readonly keyType: KeyType;
  readonly signatureAlgorithm: SignatureAlgorithm;
  readonly format?: SignatureFormat;
  readonly profile?: AdesProfile;
  readonly signMessageHash?: string;
}): AssertionBinding {
  const format = request.format ?? 'raw';
  return {
    requestId: request.id,
    digestAlgorithm: request.digestAlgorithm,
    digest: request.digest,
    keyType: request.keyType,
    signatureAlgorithm: request.signatureAlgorithm,
    format,
    ...(format === 'cms' && request.profile ? { profile: request.profile } : {}),
    ...(request.signMessageHash === undefined ? {} : { signMessageHash: request.signMessageHash }),
  };
}
