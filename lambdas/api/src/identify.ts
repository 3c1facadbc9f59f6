/**
 * Who signs: the identity assertion of a sign request verified, bound to the request and claimed once,
 * and what makes a resend the same request.
 */
import { createHash } from 'node:crypto';
import {
  AssertionError,
  assertionNonce,
  requestBindingOf,
  expectedApproval,
  signMessageHash,
  type IdentityEvidence,
  type SignerIdentity,
} from '@pipeline/core/identity';
import type { ApiDeps, SignRequestInput } from './types';

/**
 * The signer and who vouches for it: the identity assertion, verified and bound to this request (its
 * nonce is derived from the request id, the digest and how it is signed, and the sign message's hash
 * when there is one: then an ID token must also carry its issuer's approval of exactly that message for
 * this digest), then claimed once. An ID token
 * from a trusted identity provider names the person it authenticated; a request object signed with a
 * registered client's key (IDENTITY_CLIENT_KEYS) names the person that client vouches for, and is
 * accepted only from that client itself. The identity never comes from the caller's word, and the CA
 * verifies the same assertion again before it certifies.
 */
export async function identify(
  input: SignRequestInput,
  clientId: string,
  deps: ApiDeps,
): Promise<{ signer: SignerIdentity; identity: IdentityEvidence }> {
  const { identity } = deps;
  // Answered as every error is (clientFailureOf): its code, at the registry's status.
  const refuseAssertion = (err: AssertionError): never => {
    deps.onAssertionRefused?.(err.code, { clientId, requestId: input.requestId });
    throw err;
  };
  try {
    // v2 for a single document, v3 (the manifest of the documents) for `documents`.
    const binding = requestBindingOf({
      ...input,
      id: input.requestId,
      ...(input.approvedMessage ? { signMessageHash: signMessageHash(input.approvedMessage) } : {}),
    });
    const verified = await identity.verifier.verify(input.identityAssertion, assertionNonce(binding), {
      approval: expectedApproval(binding),
    });
    if (verified.evidence.source === 'trusted-client' && verified.evidence.client !== clientId) {
      throw new AssertionError(
        'CLIENT_NOT_TRUSTED',
        'a request object is accepted only from the client whose registered key signed it',
      );
    }
    const fresh = await identity.assertions.claim(verified.replayKey, {
      requestId: input.requestId,
      clientId,
      expiresAt: verified.expiresAt,
    });
    if (!fresh) {
      throw new AssertionError(
        'ASSERTION_REPLAYED',
        'this identity assertion was already used for another request',
      );
    }
    return { signer: verified.signer, identity: verified.evidence };
  } catch (err) {
    if (err instanceof AssertionError) return refuseAssertion(err);
    throw err;
  }
}

/**
 * What makes a resend the same request: the client, what is signed and how, and whom for (by the identity
 * provider's subject, so a second login of the same person for the same request is a resend too).
 */
export function inputHash(
  clientId: string,
  input: SignRequestInput,
  signer: SignerIdentity,
  identity: IdentityEvidence,
): string {
  const canonical = JSON.stringify([
    clientId,
    input.digest,
    input.digestAlgorithm,
    input.keyType,
    input.signatureAlgorithm,
    input.format ?? null,
    input.profile ?? null,
    input.level ?? null,
    input.minimumLevel ?? null,
    input.approvedMessage ? signMessageHash(input.approvedMessage) : null,
    [signer.commonName, signer.givenName, signer.surname, signer.serialNumber, signer.country],
    identity.source === 'assertion'
      ? [identity.issuer, identity.subject]
      : [identity.source, identity.client],
    // Every document as resolved, in order (a single document request's canonical form is unchanged).
    ...(input.documents ? [input.documents] : []),
    ...(input.formatOpen ? ['format open'] : []),
    ...(input.credential ? [input.credential] : []),
  ]);
  return createHash('sha256').update(canonical).digest('base64url');
}
