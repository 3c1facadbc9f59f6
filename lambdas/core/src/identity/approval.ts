import { AssertionError } from './errors';
import {
  credentialDigest,
  isCredentialBinding,
  isManifestBinding,
  manifestHash,
  type RequestBinding,
} from './binding';
import type { AssertionPolicy, ExpectedApproval } from './types';

/**
 * Proof that the identity provider displayed the sign message and the citizen approved it, in the
 * terms of the oidc-sweden Signature Extension for OpenID Connect: the e-service asks with the scope
 * `https://id.oidc.se/scope/sign`, `prompt=login consent` and the signed request parameter
 * `https://id.oidc.se/param/signRequest` carrying `tbs_data` (here: the request's digest) and
 * `sign_message`; the provider answers with the ID token claim `https://id.oidc.se/claim/userSignature`.
 *
 * The extension leaves the form of that signature to the provider. This service accepts a **sign
 * approval**: the claim's value is the standard base64 of a compact JWS (header `typ` SIGN_APPROVAL_TYPE)
 * signed with one of the issuer's published keys, whose payload states who approved what, when:
 *
 *   { iss, sub, aud, iat, nonce, tbs_data, sign_message_hash }
 *
 * `iss`, `sub` and `nonce` as in the ID token, `aud` naming this service, `iat` between the login and
 * the token, `tbs_data` as received in the signRequest, `sign_message_hash` the signMessageHash of the
 * message displayed (its MIME type and decoded text: of a signRequest in several languages, the one
 * shown; its tag, `sign_message_lang`, is not checked). The adapter verifies the JWS with the issuer's
 * keys; this module checks its claims.
 */
export const SCOPE_SIGN = 'https://id.oidc.se/scope/sign';
export const PARAM_SIGN_REQUEST = 'https://id.oidc.se/param/signRequest';
export const USER_SIGNATURE_CLAIM = 'https://id.oidc.se/claim/userSignature';
/** The JWS `typ` of a sign approval (explicit typing: an ID token or request object is not one). */
export const SIGN_APPROVAL_TYPE = 'sign-approval+jwt';

/**
 * The approval a binding asks for: none when the request has no sign message. Its tbs_data is the digest
 * of a single document, the manifestHash of a request with `documents`, the credentialDigest of a one-time
 * credential's creation.
 */
export function expectedApproval(binding: RequestBinding): ExpectedApproval | undefined {
  if (binding.signMessageHash === undefined) return undefined;
  const tbsData = isCredentialBinding(binding)
    ? credentialDigest(binding)
    : isManifestBinding(binding)
      ? manifestHash(binding.documents, binding.formatOpen)
      : binding.digest;
  return { tbsData, signMessageHash: binding.signMessageHash };
}

/** The verified ID token's claims an approval must agree with (epoch seconds). */
export interface ApprovedLogin {
  readonly issuer: string;
  readonly subject: string;
  readonly nonce: string;
  readonly authTime: number;
  readonly issuedAt: number;
}

type Payload = Readonly<Record<string, unknown>>;

const invalid = (what: string): AssertionError =>
  new AssertionError('ASSERTION_APPROVAL_INVALID', `the sign approval (userSignature) ${what}`);

/**
 * Checks a sign approval's verified payload: made by the token's issuer for the token's subject and
 * nonce, to this service, between the login and the token, for exactly this `tbs_data` and sign message.
 * Throws ASSERTION_APPROVAL_INVALID for an approval that is not about this login,
 * ASSERTION_APPROVAL_MISMATCH for one that attests another message or other data. Pure.
 */
export function checkSignApproval(
  approval: Payload,
  login: ApprovedLogin,
  expected: ExpectedApproval,
  policy: AssertionPolicy,
): void {
  if (approval.iss !== login.issuer) throw invalid('was made by another issuer than the ID token');
  if (approval.sub !== login.subject) throw invalid('names another subject than the ID token');
  if (approval.nonce !== login.nonce) throw invalid('belongs to another authentication request (nonce)');
  const aud = approval.aud;
  const audiences = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : [];
  if (!audiences.includes(policy.audience)) throw invalid('was not made for this service (aud)');
  const iat = approval.iat;
  const skew = policy.clockSkewSeconds;
  if (typeof iat !== 'number' || !Number.isFinite(iat)) throw invalid('has no iat');
  if (iat < login.authTime - skew || iat > login.issuedAt + skew) {
    throw invalid('was not made between the login and the ID token (iat)');
  }
  if (approval.tbs_data !== expected.tbsData) {
    throw new AssertionError(
      'ASSERTION_APPROVAL_MISMATCH',
      'the citizen approved signing other data (tbs_data is not the digest or manifest hash of this request)',
    );
  }
  if (approval.sign_message_hash !== expected.signMessageHash) {
    throw new AssertionError(
      'ASSERTION_APPROVAL_MISMATCH',
      'the identity provider displayed another sign message than the one of this request',
    );
  }
}
