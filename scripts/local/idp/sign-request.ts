/**
 * The local IdP's side of the oidc-sweden Signature Extension for OpenID Connect (v1.2): reading the
 * signed `https://id.oidc.se/param/signRequest` parameter of an authorization request, and making the
 * sign approval the ID token then carries as `https://id.oidc.se/claim/userSignature`.
 *
 * The parameter is a JWT signed with the client's registered key (extension 3.1.1.1 and 3.1.2), or a
 * JSON object in a Request Object signed with it (3.1.1.2, see RequestObjectSignRequests): the JWT's `iss`
 * the client, `aud` this issuer or its authorization endpoint (extension 5.1), `iat`/`exp` (the
 * extension recommends them; this provider requires them, refuses the request from `exp` on, and allows
 * at most MAX_REQUEST_LIFETIME_SECONDS between them), `tbs_data` (base64, required with the sign scope;
 * for several documents under one login the manifest hash, base64url),
 * `sign_message` (`message` and/or `message#<lang>`: base64 of UTF-8; `mime_type` text/plain or
 * text/markdown) and, this deployment's own field, `document_name` (shown beside the fingerprint). Of
 * several languages the one the citizen asks for is shown (OIDC.Sweden.Params 2.1: the user interface
 * locale, here `ui_locales` then the browser's Accept-Language; else the message without a tag; else
 * Swedish, English, the first). A message is displayed only if it passes the signing service's own
 * rules (validateSignMessage; one composed for several documents, with their numbered list, may be up
 * to MAX_COMPOSED_SIGN_MESSAGE_LENGTH characters): a message that cannot be displayed refuses the request (extension 5.1),
 * whichever language would be shown. So is a document name, on one line: what the page shows is signed
 * by the client (the signRequest) and attested by the provider (the approval names it, `document_name`,
 * and the language shown, `sign_message_lang`).
 */
import { randomUUID } from 'node:crypto';
import { SignJWT, compactVerify, createLocalJWKSet, decodeProtectedHeader, importJWK, type JWK } from 'jose';
import {
  MAX_COMPOSED_SIGN_MESSAGE_LENGTH,
  MAX_SIGN_MESSAGE_LENGTH,
  SIGN_APPROVAL_TYPE,
  SignMessageError,
  characterProblem,
  signMessageHash,
  validateSignMessage,
  type SignMessage,
} from '@pipeline/core/identity';
import type { PrivateJwks } from './keys';

export { PARAM_SIGN_REQUEST, SCOPE_SIGN, USER_SIGNATURE_CLAIM } from '@pipeline/core/identity';

export const MAX_REQUEST_LIFETIME_SECONDS = 600;
const MAX_DOCUMENT_NAME = 200;
/** The parameter itself: a composed message of 8000 characters of 4 bytes, base64 twice over, fits. */
const MAX_PARAMETER_LENGTH = 64_000;
const SKEW_SECONDS = 60;
/** What a signRequest JWT or a Request Object may be signed with: never `none` or HMAC. */
export const SIGN_REQUEST_ALGORITHMS = ['ES256', 'ES384', 'RS256', 'PS256'] as const;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** A manifest hash (several documents): base64url of a SHA-256, unpadded. */
const MANIFEST_HASH = /^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/;

/** Whether `tbs_data` is the manifest hash of several documents rather than one document's digest. */
export function isManifestHash(tbsData: string): boolean {
  return MANIFEST_HASH.test(tbsData);
}

/**
 * A message the page can display, by the service's rules (validateSignMessage); for several documents
 * (`tbs_data` a manifest hash) the message composed with their list may be up to
 * MAX_COMPOSED_SIGN_MESSAGE_LENGTH characters, by the same character rules (characterProblem: none of
 * the forbidden characters, not blank).
 */
const displayableMessage =
  (severalDocuments: boolean) =>
  (value: { text: string; mimeType: unknown }): SignMessage => {
    const length = [...value.text].length;
    if (length <= MAX_SIGN_MESSAGE_LENGTH || !severalDocuments) return validateSignMessage(value);
    if (length > MAX_COMPOSED_SIGN_MESSAGE_LENGTH) {
      throw new SignMessageError(
        `a message for several documents must be at most ${MAX_COMPOSED_SIGN_MESSAGE_LENGTH} characters`,
      );
    }
    const { mimeType } = validateSignMessage({ text: '-', mimeType: value.mimeType });
    if (characterProblem(value.text) !== undefined) {
      throw new SignMessageError('the message holds characters a sign message must not, or is blank');
    }
    return { text: value.text, mimeType };
  };

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

const LANGUAGE_TAG = /^[A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*$/;
const MAX_LANGUAGES = 10;

/**
 * The language ranges the citizen asks for, best first: `ui_locales` (space-separated, in order), then
 * the browser's Accept-Language (by q, `*` and q=0 dropped). At most MAX_LANGUAGES; anything that is not
 * a language tag is ignored.
 */
export function preferredLanguages(uiLocales: unknown, acceptLanguage: unknown): string[] {
  const fromUi = typeof uiLocales === 'string' ? uiLocales.split(' ') : [];
  const fromHeader =
    typeof acceptLanguage === 'string'
      ? acceptLanguage
          .split(',')
          .slice(0, 4 * MAX_LANGUAGES)
          .map((part, index) => {
            const [tag = '', ...params] = part.trim().split(';');
            const q = params.map((p) => /^\s*q=([01](?:\.\d{0,3})?)\s*$/.exec(p)?.[1]).find(Boolean);
            return { tag: tag.trim(), q: q === undefined ? 1 : Number(q), index };
          })
          .filter((entry) => entry.q > 0)
          .sort((a, b) => b.q - a.q || a.index - b.index)
          .map((entry) => entry.tag)
      : [];
  const seen = new Set<string>();
  return [...fromUi, ...fromHeader]
    .filter((tag) => LANGUAGE_TAG.test(tag))
    .map((tag) => tag.toLowerCase())
    .filter((tag) => !seen.has(tag) && seen.add(tag))
    .slice(0, MAX_LANGUAGES);
}

/**
 * The message to display (OIDC.Sweden.Params 2.1): the one in the first language the citizen asks for
 * that the request has (`sv-SE` asked takes `message#sv`, `en` asked takes `message#en-GB`); if none
 * matches, the one without a language tag; else Swedish, else English, else the first tagged one (the
 * provider's own order).
 */
function chooseMessage(
  signMessage: Record<string, unknown>,
  languages: readonly string[],
): { encoded: unknown; lang?: string } {
  const tagged = Object.keys(signMessage)
    .map((key) => /^message#(.+)$/.exec(key)?.[1])
    .filter((lang): lang is string => lang !== undefined);
  for (const lang of tagged) {
    if (!LANGUAGE_TAG.test(lang)) return fail(`sign_message has a member with an invalid language tag`);
  }
  const primary = (tag: string): string => tag.toLowerCase().split('-')[0];
  const matching = (wanted: string): string | undefined =>
    tagged.find((t) => t.toLowerCase() === wanted) ??
    tagged.find((t) => primary(t) === primary(wanted)) ??
    undefined;
  for (const wanted of languages) {
    const lang = matching(wanted);
    if (lang !== undefined) return { encoded: signMessage[`message#${lang}`], lang };
  }
  if ('message' in signMessage) return { encoded: signMessage.message };
  const lang = ['sv', 'en'].map(matching).find((l) => l !== undefined) ?? tagged[0];
  return lang === undefined
    ? fail('sign_message has no message')
    : { encoded: signMessage[`message#${lang}`], lang };
}

/** Each message of a sign_message by its rules: a request with any message that cannot be displayed is refused. */
function checkEveryMessage(
  signMessage: Record<string, unknown>,
  mimeType: unknown,
  validate: (value: { text: string; mimeType: unknown }) => SignMessage,
): void {
  for (const key of Object.keys(signMessage)) {
    if (key !== 'message' && !key.startsWith('message#')) continue;
    validate({ text: decodeText(signMessage[key], 'sign_message'), mimeType });
  }
}

/** Who may send a signRequest, to whom, and when: the checks of its signed JWT's claims. */
export interface SignRequestAudience {
  readonly clientId: string;
  readonly issuer: string;
  /** The authorization endpoint's URL, the other audience the extension allows (5.1). */
  readonly authorizationEndpoint?: string;
  readonly nowSeconds?: number;
}

/**
 * The claims of the signed JWT that holds the signRequest (the custom parameter's JWT, or the Request
 * Object): `iss` the client, `aud` this provider, `iat` and `exp` present, refused from `exp` on.
 * `what` names the JWT in the refusal.
 */
export function checkSignRequestClaims(
  payload: Record<string, unknown>,
  options: SignRequestAudience,
  what = 'signRequest',
): void {
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (payload.iss !== options.clientId) fail(`${what} iss must be the client`);
  const audiences = [options.issuer, options.authorizationEndpoint].filter((a) => a !== undefined);
  const aud = payload.aud;
  if (!(
    (typeof aud === 'string' && audiences.includes(aud)) ||
    (Array.isArray(aud) && aud.some((a) => typeof a === 'string' && audiences.includes(a)))
  )) {
    fail(`${what} aud must be this provider`);
  }
  const { iat, exp } = payload;
  if (typeof iat !== 'number' || typeof exp !== 'number') return fail(`${what} needs iat and exp`);
  // exp as RFC 7519 4.1.4 and extension 3.1.2 say: refused on or after it, no leeway (the client
  // chooses exp; a short one is its choice). iat may be a little ahead of this clock.
  if (now >= exp) fail(`${what} has expired (exp)`);
  if (iat > now + SKEW_SECONDS || exp - iat > MAX_REQUEST_LIFETIME_SECONDS) {
    fail(`${what} is not yet valid, or lives longer than ${MAX_REQUEST_LIFETIME_SECONDS} s`);
  }
}

/**
 * Verifies the signRequest JWT of `clientId` with its registered keys and reads it (the parameter
 * placed as a custom request parameter, extension 3.1.1.1).
 */
export async function readSignRequest(
  jwt: unknown,
  options: SignRequestAudience & {
    readonly clientJwks: { readonly keys: readonly JWK[] };
    /** The language ranges the citizen asks for (preferredLanguages), best first. */
    readonly languages?: readonly string[];
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
        algorithms: [...SIGN_REQUEST_ALGORITHMS],
      },
    );
    payload = JSON.parse(Buffer.from(bytes).toString('utf8')) as Record<string, unknown>;
  } catch {
    return fail("signRequest is not a JWT signed with the client's registered key");
  }
  if (!payload || typeof payload !== 'object' || Array.isArray(payload))
    return fail('signRequest is not an object');
  checkSignRequestClaims(payload, options);
  return readSignRequestValue(payload, options.languages ?? []);
}

/**
 * The signRequest's value (extension 3.1): `tbs_data`, `sign_message` and `document_name`, the message
 * chosen by `languages`. Its signature and claims are checked by the caller (readSignRequest, or the
 * provider's Request Object processing).
 */
export function readSignRequestValue(value: unknown, languages: readonly string[]): SignRequest {
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    return fail('signRequest must be a JSON object');
  }
  const payload = value as Record<string, unknown>;
  const tbsData = payload.tbs_data;
  if (
    typeof tbsData !== 'string' ||
    tbsData.length === 0 ||
    tbsData.length > 200 ||
    !(BASE64.test(tbsData) || isManifestHash(tbsData))
  ) {
    return fail('signRequest tbs_data must be base64 (the data to be signed) or a manifest hash');
  }
  const signMessage = payload.sign_message;
  if (!signMessage || typeof signMessage !== 'object' || Array.isArray(signMessage)) {
    return fail('signRequest sign_message is required');
  }
  const messages = signMessage as Record<string, unknown>;
  const { encoded, lang } = chooseMessage(messages, languages);
  const mimeType = messages.mime_type ?? 'text/plain';
  let message: SignMessage;
  try {
    const displayable = displayableMessage(isManifestHash(tbsData));
    checkEveryMessage(messages, mimeType, displayable);
    message = displayable({ text: decodeText(encoded, 'sign_message'), mimeType });
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

/** The client provided user message parameter (OIDC.Sweden.Params 2.1). */
export const PARAM_USER_MESSAGE = 'https://id.oidc.se/param/userMessage';

/**
 * A user message to show at the login (OIDC.Sweden.Params 2.1): the parameter's JSON (`message` and/or
 * `message#<lang>`, base64 of UTF-8; `mime_type`), the message chosen by `languages` as a sign message is.
 * Every message must pass the sign message rule and the MIME type must be one this provider displays;
 * otherwise the request is refused (the specification lets a provider not display it: this one says so).
 */
export function readUserMessage(
  value: unknown,
  languages: readonly string[],
): { readonly message: SignMessage; readonly lang?: string } {
  let parsed: unknown;
  try {
    parsed =
      typeof value === 'string' && value.length <= MAX_PARAMETER_LENGTH ? JSON.parse(value) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return fail(`${PARAM_USER_MESSAGE} must be a JSON object`);
  }
  const messages = parsed as Record<string, unknown>;
  const { encoded, lang } = chooseMessage(messages, languages);
  const mimeType = messages.mime_type ?? 'text/plain';
  try {
    checkEveryMessage(messages, mimeType, validateSignMessage);
    const message = validateSignMessage({ text: decodeText(encoded, 'userMessage'), mimeType });
    return lang === undefined ? { message } : { message, lang };
  } catch (err) {
    if (err instanceof SignMessageError) return fail(`the user message cannot be displayed: ${err.message}`);
    throw err;
  }
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
  if (isManifestHash(tbsData)) return 'SHA-256 of the list of documents';
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
    // The language of the message shown, when the request tagged it (`message#sv`).
    ...(options.request.lang === undefined ? {} : { sign_message_lang: options.request.lang }),
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

/** How an authorization request's parameters refer to a signRequest that came in its Request Object. */
export const REQUEST_OBJECT_REFERENCE = 'request-object:';

/**
 * signRequest values that came in a verified Request Object (extension 3.1.1.2), where the value is a
 * JSON object and not a string the provider can keep among the request's parameters: kept here, and the
 * parameter becomes a random reference to it. Only the provider's Request Object processing puts
 * entries; a reference sent as a plain parameter is no JWT and is refused.
 */
export class RequestObjectSignRequests {
  private readonly entries = new Map<
    string,
    { clientId: string; value: unknown; exp: number; expiresAt: number }
  >();

  public constructor(private readonly ttlMs = 10 * 60_000) {}

  public put(clientId: string, value: unknown, exp: number): string {
    const now = Date.now();
    for (const [id, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(id);
    const reference = `${REQUEST_OBJECT_REFERENCE}${randomUUID()}`;
    this.entries.set(reference, { clientId, value, exp, expiresAt: now + this.ttlMs });
    return reference;
  }

  /** The value and the Request Object's exp, for this client only. */
  public get(reference: unknown, clientId: string): { value: unknown; exp: number } | undefined {
    const entry = typeof reference === 'string' ? this.entries.get(reference) : undefined;
    return entry && entry.clientId === clientId && entry.expiresAt > Date.now()
      ? { value: entry.value, exp: entry.exp }
      : undefined;
  }
}
