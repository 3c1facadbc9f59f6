/**
 * The local IdP's side of the oidc-sweden Signature Extension for OpenID Connect (v1.1): reading the
 * signed `https://id.oidc.se/param/signRequest` parameter of an authorization request, and making the
 * sign approval the ID token then carries as `https://id.oidc.se/claim/userSignature`.
 *
 * The parameter is a JWT signed with the client's registered key (extension 3.1.1.1 and 3.1.2): `iss`
 * the client, `aud` this issuer, `iat`/`exp` (at most MAX_REQUEST_LIFETIME_SECONDS), `tbs_data` (base64,
 * required with the sign scope), `sign_message` (`message` or `message#<lang>`: base64 of UTF-8;
 * `mime_type` text/plain or text/markdown) and, this deployment's own field, `document_name` (shown
 * beside the fingerprint). A message is displayed only if it passes the signing service's own rules
 * (validateSignMessage): a message that cannot be displayed refuses the request (extension 5.1). So is a
 * document name, on one line: what the page shows is signed by the client (the signRequest) and attested
 * by the provider (the approval names it, `document_name`).
 */
import { SignJWT, compactVerify, createLocalJWKSet, decodeProtectedHeader, importJWK, type JWK } from 'jose';
import {
  SIGN_APPROVAL_TYPE,
  SignMessageError,
  signMessageHash,
  validateSignMessage,
  type SignMessage,
} from '@pipeline/core';
import type { PrivateJwks } from './keys';

export { PARAM_SIGN_REQUEST, SCOPE_SIGN, USER_SIGNATURE_CLAIM } from '@pipeline/core';

export const MAX_REQUEST_LIFETIME_SECONDS = 600;
const MAX_DOCUMENT_NAME = 200;
/** The parameter itself: a message of 1000 characters of 4 bytes, base64 twice over, fits. */
const MAX_PARAMETER_LENGTH = 16_000;
const SKEW_SECONDS = 60;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** What the consent page shows and the approval attests. */
export interface SignRequest {
  /** As received (standard base64): what the approval's tbs_data repeats. */
  readonly tbsData: string;
  readonly message: SignMessage;
  /** The language tag of the message chosen (`message#sv`), if it had one. */
  readonly lang?: string;
  readonly documentName?: string;
}

/** A signRequest the provider cannot accept: answered with OAuth `invalid_request`. */
export class SignRequestError extends Error {
  public override readonly name = 'SignRequestError';
}

const fail = (message: string): never => {
  throw new SignRequestError(message);
};

/** UTF-8 text of standard base64, refused when it is not canonical base64 of valid UTF-8. */
function decodeText(value: unknown, field: string): string {
  if (typeof value !== 'string' || !BASE64.test(value) || value.length === 0) {
    return fail(`${field} must be base64 of UTF-8`);
  }
  const bytes = Buffer.from(value, 'base64');
  const text = bytes.toString('utf8');
  if (!Buffer.from(text, 'utf8').equals(bytes)) return fail(`${field} is not valid UTF-8`);
  return text;
}

/**
 * The message to display: the one without a language tag, else Swedish, else English, else the first
 * (the provider's user interface language is Swedish first; OIDC.Sweden.Params 2.1).
 */
function chooseMessage(signMessage: Record<string, unknown>): { encoded: unknown; lang?: string } {
  if ('message' in signMessage) return { encoded: signMessage.message };
  const tagged = Object.keys(signMessage)
    .map((key) => /^message#([A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*)$/.exec(key)?.[1])
    .filter((lang): lang is string => lang !== undefined);
  const lang = ['sv', 'en'].find((l) => tagged.includes(l)) ?? tagged[0];
  return lang === undefined
    ? fail('sign_message has no message')
    : { encoded: signMessage[`message#${lang}`], lang };
}

/**
 * Verifies the signRequest JWT of `clientId` with its registered keys and reads it. `requireTbsData`:
 * the sign scope was asked for (tbs_data is then mandatory).
 */
export async function readSignRequest(
  jwt: unknown,
  options: {
    readonly clientId: string;
    readonly clientJwks: { readonly keys: readonly JWK[] };
    readonly issuer: string;
    readonly nowSeconds?: number;
  },
): Promise<SignRequest> {
  if (typeof jwt !== 'string' || jwt.length > MAX_PARAMETER_LENGTH) {
    return fail('signRequest must be a signed JWT');
  }
  let payload: Record<string, unknown>;
  try {
    const alg = decodeProtectedHeader(jwt).alg;
    if (alg === undefined || alg === 'none' || alg.startsWith('HS')) throw new Error('alg');
    const { payload: bytes } = await compactVerify(
      jwt,
      createLocalJWKSet({ keys: [...options.clientJwks.keys] }),
      {
        algorithms: ['ES256', 'ES384', 'RS256', 'PS256'],
      },
    );
    payload = JSON.parse(Buffer.from(bytes).toString('utf8')) as Record<string, unknown>;
  } catch {
    return fail("signRequest is not a JWT signed with the client's registered key");
  }
  if (!payload || typeof payload !== 'object' || Array.isArray(payload))
    return fail('signRequest is not an object');
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (payload.iss !== options.clientId) return fail('signRequest iss must be the client');
  const aud = payload.aud;
  if (!(aud === options.issuer || (Array.isArray(aud) && aud.includes(options.issuer)))) {
    return fail('signRequest aud must be this provider');
  }
  const { iat, exp } = payload;
  if (typeof iat !== 'number' || typeof exp !== 'number') return fail('signRequest needs iat and exp');
  if (iat > now + SKEW_SECONDS || exp < now - SKEW_SECONDS || exp - iat > MAX_REQUEST_LIFETIME_SECONDS) {
    return fail(
      `signRequest is expired, not yet valid, or lives longer than ${MAX_REQUEST_LIFETIME_SECONDS} s`,
    );
  }
  const tbsData = payload.tbs_data;
  if (typeof tbsData !== 'string' || tbsData.length === 0 || tbsData.length > 200 || !BASE64.test(tbsData)) {
    return fail('signRequest tbs_data must be base64 (the data to be signed)');
  }
  const signMessage = payload.sign_message;
  if (!signMessage || typeof signMessage !== 'object' || Array.isArray(signMessage)) {
    return fail('signRequest sign_message is required');
  }
  const { encoded, lang } = chooseMessage(signMessage as Record<string, unknown>);
  const mimeType = (signMessage as Record<string, unknown>).mime_type ?? 'text/plain';
  let message: SignMessage;
  try {
    message = validateSignMessage({ text: decodeText(encoded, 'sign_message'), mimeType });
  } catch (err) {
    if (err instanceof SignMessageError) return fail(`the sign message cannot be displayed: ${err.message}`);
    throw err;
  }
  const documentName = payload.document_name;
  if (documentName !== undefined && !isDocumentName(documentName)) {
    return fail(
      `signRequest document_name must be a single line of at most ${MAX_DOCUMENT_NAME} characters, by the sign message's rules`,
    );
  }
  return {
    tbsData,
    message,
    ...(lang === undefined ? {} : { lang }),
    ...(typeof documentName === 'string' ? { documentName } : {}),
  };
}

/** A document name: one line (no tab or line feed) that the sign message rules accept. */
function isDocumentName(name: unknown): name is string {
  if (typeof name !== 'string' || name.length > MAX_DOCUMENT_NAME || /[\t\n]/.test(name)) return false;
  try {
    validateSignMessage({ text: name });
    return true;
  } catch (err) {
    if (err instanceof SignMessageError) return false;
    throw err;
  }
}

/** What the consent page labels the fingerprint with, from the data's length. */
export function fingerprintLabel(tbsData: string): string {
  const bytes = Buffer.from(tbsData, 'base64').length;
  return { 32: 'SHA-256', 48: 'SHA-384', 64: 'SHA-512' }[bytes] ?? `${bytes} bytes`;
}

/**
 * The sign approval (see lambdas/core/src/identity/approval.ts): a JWS of type sign-approval+jwt, signed
 * with the provider's first key of the type the client's ID tokens use, over who approved what and when.
 * Returned as the userSignature claim's value: standard base64 of the compact JWS.
 */
export async function signApproval(options: {
  readonly jwks: PrivateJwks;
  readonly alg: 'RS256' | 'ES256';
  readonly issuer: string;
  readonly subject: string;
  readonly clientId: string;
  readonly nonce: string;
  readonly request: SignRequest;
  readonly approvedAt: number;
}): Promise<string> {
  const kty = options.alg === 'ES256' ? 'EC' : 'RSA';
  const jwk = options.jwks.keys.find((k) => k.kty === kty);
  if (!jwk) throw new Error(`the provider has no ${kty} key to sign approvals with`);
  const jws = await new SignJWT({
    nonce: options.nonce,
    tbs_data: options.request.tbsData,
    sign_message_hash: signMessageHash(options.request.message),
    // The document name the page showed beside the fingerprint, attested with the rest.
    ...(options.request.documentName === undefined ? {} : { document_name: options.request.documentName }),
  })
    .setProtectedHeader({ alg: options.alg, kid: jwk.kid, typ: SIGN_APPROVAL_TYPE })
    .setIssuer(options.issuer)
    .setSubject(options.subject)
    .setAudience(options.clientId)
    .setIssuedAt(options.approvedAt)
    .sign(await importJWK(jwk, options.alg));
  return Buffer.from(jws).toString('base64');
}

/**
 * Sign approvals by grant, until the ID token of that grant is made (the authorization code lives a
 * minute): the consent step stores one, the token endpoint's account claims read it. In memory: a
 * restart of the provider ends every login anyway.
 */
export class ApprovalStore {
  private readonly approvals = new Map<string, { value: string; expiresAt: number }>();

  public constructor(private readonly ttlMs = 10 * 60_000) {}

  public put(grantId: string, userSignature: string): void {
    const now = Date.now();
    for (const [id, entry] of this.approvals) if (entry.expiresAt <= now) this.approvals.delete(id);
    this.approvals.set(grantId, { value: userSignature, expiresAt: now + this.ttlMs });
  }

  public get(grantId: string | undefined): string | undefined {
    const entry = grantId === undefined ? undefined : this.approvals.get(grantId);
    return entry && entry.expiresAt > Date.now() ? entry.value : undefined;
  }
}
