/**
 * The evidence of a DSS-Ext request (the Swedish eID framework's central signing): the e-service's signed
 * SignRequest and the identity provider's signed SAML assertion, carried together as the request's
 * identity assertion so that the API and the CA verify both themselves. The assertion answers an
 * AuthnRequest whose ID the door derives from the request's binding nonce and the SignRequest's octets:
 * a table writer who changes what is signed, or swaps the SignRequest, no longer matches its InResponseTo.
 */
import { createHash } from 'node:crypto';

/** `dss-ext.<base64url SignRequest>.<base64url assertion>`. */
export const DSS_EVIDENCE_PREFIX = 'dss-ext.';
/** A batch of the CA's (100 items) stays below Lambda's 6 MB payload. */
export const MAX_DSS_EVIDENCE_LENGTH = 40_000;

export interface DssEvidence {
  /** The SignRequest's XML octets as the e-service posted them. */
  readonly signRequest: Buffer;
  /** The assertion's XML octets, with its own signature. */
  readonly assertion: Buffer;
}

export function isDssEvidence(token: string): boolean {
  return token.startsWith(DSS_EVIDENCE_PREFIX);
}

export function encodeDssEvidence(evidence: DssEvidence): string {
  return `${DSS_EVIDENCE_PREFIX}${evidence.signRequest.toString('base64url')}.${evidence.assertion.toString('base64url')}`;
}

/** The two documents of a token, or undefined when it is not one. */
export function decodeDssEvidence(token: string): DssEvidence | undefined {
  if (!isDssEvidence(token) || token.length > MAX_DSS_EVIDENCE_LENGTH) return undefined;
  const parts = token.slice(DSS_EVIDENCE_PREFIX.length).split('.');
  if (parts.length !== 2 || parts.some((p) => !/^[A-Za-z0-9_-]+$/.test(p))) return undefined;
  return { signRequest: Buffer.from(parts[0]!, 'base64url'), assertion: Buffer.from(parts[1]!, 'base64url') };
}

const AUTHN_REQUEST_CONTEXT = 'hsm-signing-pipeline/dss-ext/authn-request/v1';
const SAD_REQUEST_CONTEXT = 'hsm-signing-pipeline/dss-ext/sad-request/v1';

/**
 * The AuthnRequest ID for a request's binding nonce (assertionNonce) and SignRequest octets: "_" (an xs:ID
 * starts with a letter or "_") and base64url(SHA-256 of context, nonce, SHA-256 hex of the SignRequest).
 */
export function authnRequestId(nonce: string, signRequest: Buffer): string {
  const requestHash = createHash('sha256').update(signRequest).digest('hex');
  return `_${createHash('sha256').update([AUTHN_REQUEST_CONTEXT, nonce, requestHash].join('\n')).digest('base64url')}`;
}

/** The SADRequest ID that goes with an AuthnRequest ID (ELN-0613 §3.1). */
export function sadRequestId(authnRequest: string): string {
  return `_${createHash('sha256').update([SAD_REQUEST_CONTEXT, authnRequest].join('\n')).digest('base64url')}`;
}
