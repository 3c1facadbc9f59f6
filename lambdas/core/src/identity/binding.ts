import { createHash } from 'node:crypto';
import type { DigestAlgorithm } from '../algorithms';

/** Versioned so the derivation can change without an old nonce matching a new request. */
export const BINDING_CONTEXT = 'hsm-signing-pipeline/sign-request/v1';

/** What one login authorises: signing this digest under this request id, nothing else. */
export interface AssertionBinding {
  readonly requestId: string;
  readonly digestAlgorithm: DigestAlgorithm;
  /** The digest as the client sends it: standard base64. */
  readonly digest: string;
}

/**
 * The `nonce` an ID token must carry to be used for this sign request:
 * base64url(SHA-256(context "\n" requestId "\n" digestAlgorithm "\n" digest)), 43 characters. The e-service
 * computes it before sending the citizen to the identity provider, which echoes it in the ID token, so
 * one login cannot be replayed for another document or request.
 */
export function assertionNonce(binding: AssertionBinding): string {
  return createHash('sha256')
    .update(
      [BINDING_CONTEXT, binding.requestId.toLowerCase(), binding.digestAlgorithm, binding.digest].join('\n'),
    )
    .digest('base64url');
}
