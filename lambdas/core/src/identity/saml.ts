/**
 * The checks on a SAML assertion whose signature verified (adapters/saml reads these facts from the signed
 * octets): the Swedish eID framework's processing rules for a signature service (ELN-0602 §6.3, §7), the
 * sign message attestation (ELN-0604 §3.2.4) and who signs (ELN-0607 §2.1.3.3). Pure: no XML here. Each
 * refusal is an AssertionError of the one registry; the DSS-Ext door maps those to the framework's status
 * codes in one place.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { AssertionError } from './errors';

/** What a verified assertion states, read from its signed octets. */
export interface SamlAssertionFacts {
  /** Its ID: the AssertionRef of the certificate's AuthContext. */
  readonly id: string;
  readonly issuer: string;
  /** IssueInstant, epoch ms. */
  readonly issueInstant: number;
  /** The bearer SubjectConfirmationData's. */
  readonly inResponseTo?: string;
  readonly recipient?: string;
  readonly confirmationNotOnOrAfter?: number;
  readonly notBefore?: number;
  readonly notOnOrAfter?: number;
  readonly audiences: readonly string[];
  /** AuthnStatement/@AuthnInstant, epoch ms. */
  readonly authnInstant: number;
  readonly authnContextClassRef: string;
  readonly attributes: readonly { readonly name: string; readonly values: readonly string[] }[];
}

/** What this assertion must answer: one AuthnRequest of one sign request, at this service. */
export interface SamlExpectations {
  /** The identity provider the sign request named. */
  readonly issuer: string;
  /** The AuthnRequest ID (derived from the request's binding). */
  readonly inResponseTo: string;
  /** Our SP entityID. */
  readonly audience: string;
  /** Our assertion consumer service URL. */
  readonly recipient: string;
  /** The levels of assurance the AuthnRequest asked for (any of them). */
  readonly acceptedLoa: readonly string[];
  /** Epoch ms when the AuthnRequest was made: ForceAuthn means the login is not older. */
  readonly requestedAt: number;
  readonly now: number;
  readonly clockSkewMs: number;
  /** Longest accepted time between the login and now (the CA's bound on a request's wait). */
  readonly maxAgeMs: number;
}

/** The framework's rules on subject confirmation, conditions, time and level of assurance. */
export function checkSamlAssertion(facts: SamlAssertionFacts, expected: SamlExpectations): void {
  const { now, clockSkewMs: skew } = expected;
  if (facts.issuer !== expected.issuer) {
    throw new AssertionError(
      'ASSERTION_ISSUER_UNTRUSTED',
      'the assertion is from another identity provider than the request named',
    );
  }
  if (facts.inResponseTo !== expected.inResponseTo) {
    throw new AssertionError(
      'ASSERTION_BINDING_MISMATCH',
      'the assertion answers another authentication request',
    );
  }
  if (facts.recipient !== expected.recipient) {
    throw new AssertionError(
      'ASSERTION_AUDIENCE_MISMATCH',
      'the assertion was confirmed for another recipient',
    );
  }
  if (!facts.audiences.includes(expected.audience)) {
    throw new AssertionError('ASSERTION_AUDIENCE_MISMATCH', 'the assertion was not issued to this service');
  }
  if (facts.notBefore !== undefined && facts.notBefore > now + skew) {
    throw new AssertionError('ASSERTION_NOT_YET_VALID', 'the assertion is not valid yet');
  }
  if (facts.authnInstant < expected.requestedAt - skew || facts.authnInstant > now + skew) {
    throw new AssertionError('ASSERTION_LOGIN_NOT_FRESH', 'the login is not the one the request forced');
  }
  if (now - facts.authnInstant > expected.maxAgeMs + skew) {
    throw new AssertionError('ASSERTION_STALE', 'the login is older than a request may wait');
  }
  if (!expected.acceptedLoa.includes(facts.authnContextClassRef)) {
    throw new AssertionError(
      'ASSERTION_LOA_INSUFFICIENT',
      'the level of assurance is not one the request asked for',
    );
  }
}

/**
 * The bearer confirmation's and the conditions' end of validity: checked where the assertion is consumed
 * (the door, at once), not by the CA, which bounds the login's age instead (a request may wait in the queue
 * longer than an assertion's few minutes).
 */
export function checkSamlValidity(facts: SamlAssertionFacts, now: number, skew: number): void {
  for (const end of [facts.notOnOrAfter, facts.confirmationNotOnOrAfter]) {
    if (end === undefined || end <= now - skew) {
      throw new AssertionError('ASSERTION_EXPIRED', 'the assertion has expired');
    }
  }
}

/** Every value of the request's Signer attributes must be among the assertion's (ELN-0607 §2.1.3.3). */
export function checkSignerAttributes(
  signer: readonly { readonly name: string; readonly values: readonly string[] }[],
  facts: SamlAssertionFacts,
): void {
  for (const wanted of signer) {
    const got = facts.attributes.filter((a) => a.name === wanted.name).flatMap((a) => a.values);
    if (wanted.values.some((v) => !got.includes(v))) {
      throw new AssertionError('SIGNER_MISMATCH', 'the assertion names another person than the request');
    }
  }
}

/** signMessageDigest (urn:oid:1.2.752.201.3.14, ELN-0604 §3.2.4). */
export const SIGN_MESSAGE_DIGEST_ATTRIBUTE = 'urn:oid:1.2.752.201.3.14';

const DIGEST_ALGORITHMS: Readonly<Record<string, string>> = {
  'http://www.w3.org/2001/04/xmlenc#sha256': 'sha256',
  'http://www.w3.org/2001/04/xmldsig-more#sha384': 'sha384',
  'http://www.w3.org/2001/04/xmlenc#sha512': 'sha512',
};

/**
 * The identity provider's attestation that it showed this sign message: signMessageDigest's value is
 * `<digest URI>;<base64 digest of the message octets>`. Missing with MustShow, or (whatever MustShow says)
 * present for another message, is a refusal; an encrypted message (whose key is the identity provider's)
 * can only be required to be attested, not compared.
 */
export function checkSignMessageDigest(
  facts: SamlAssertionFacts,
  signMessage: { readonly mustShow: boolean; readonly message?: Uint8Array } | undefined,
): void {
  const values = facts.attributes
    .filter((a) => a.name === SIGN_MESSAGE_DIGEST_ATTRIBUTE)
    .flatMap((a) => a.values);
  if (signMessage === undefined) return;
  if (values.length === 0) {
    if (signMessage.mustShow) {
      throw new AssertionError(
        'ASSERTION_APPROVAL_MISSING',
        'the identity provider did not attest the sign message',
      );
    }
    return;
  }
  if (values.length > 1)
    throw new AssertionError('ASSERTION_APPROVAL_INVALID', 'signMessageDigest appears more than once');
  const value = (values[0] ?? '').trim();
  const separator = value.indexOf(';');
  const hash = DIGEST_ALGORITHMS[value.slice(0, separator)];
  const digest = Buffer.from(value.slice(separator + 1), 'base64');
  if (separator < 0 || hash === undefined || digest.length === 0) {
    throw new AssertionError('ASSERTION_APPROVAL_INVALID', 'signMessageDigest is not <digest URI>;<base64>');
  }
  if (signMessage.message === undefined) return;
  const expected = createHash(hash).update(signMessage.message).digest();
  if (expected.length !== digest.length || !timingSafeEqual(expected, digest)) {
    throw new AssertionError(
      'ASSERTION_APPROVAL_MISMATCH',
      'the identity provider attests another sign message',
    );
  }
}
