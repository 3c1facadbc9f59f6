/**
 * The IdP's samlp:Response (02 §6): a signed Response around an assertion signed itself (enveloped,
 * exc-c14n, rsa-sha256, SHA-256, through @pipeline/xml's signXml with a Node key), or a Response with an
 * error status. The SAD (13 §3.2.1) is a JWT signed with the same key (jose).
 */
import { createPrivateKey, randomBytes, sign, type KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import { signXml, type XmlSigner } from '@pipeline/xml';
import { escapeHtml } from '../../shared/html';
import type { TestCitizen } from '../idp/citizens';
import { certBase64, type KeyPair } from './keys';
import { ATTRIBUTES, SAML_NS, STATUS, type SadRequest } from './saml';

const RSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';
const URI_FORMAT = 'urn:oasis:names:tc:SAML:2.0:attrname-format:uri';
const LIFETIME_MS = 5 * 60_000;

export const newId = (): string => `_${randomBytes(16).toString('hex')}`;
const instant = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

export function xmlSigner(keys: KeyPair): XmlSigner {
  const key: KeyObject = createPrivateKey(keys.keyPem);
  return {
    signatureMethod: RSA_SHA256,
    certificates: [Buffer.from(certBase64(keys.certPem), 'base64')],
    sign: (octets) => Promise.resolve(sign('sha256', octets, key)),
  };
}

export interface ResponseContext {
  readonly idpEntityId: string;
  readonly spEntityId: string;
  readonly acsUrl: string;
  readonly inResponseTo: string;
}

export interface AssertionContent {
  readonly citizen: TestCitizen;
  readonly loa: string;
  /** InResponseTo of the SubjectConfirmationData (the AuthnRequest's ID unless a test says otherwise). */
  readonly subjectInResponseTo: string;
  readonly signMessageDigest: string | undefined;
  readonly sad: string | undefined;
}

function attribute(name: string, friendlyName: string, value: string): string {
  return (
    `<saml:Attribute Name="${name}" FriendlyName="${friendlyName}" NameFormat="${URI_FORMAT}">` +
    `<saml:AttributeValue>${escapeHtml(value)}</saml:AttributeValue></saml:Attribute>`
  );
}

/** YYYY-MM-DD from the personal identity number's first eight digits. */
const dateOfBirth = (pnr: string): string => `${pnr.slice(0, 4)}-${pnr.slice(4, 6)}-${pnr.slice(6, 8)}`;

function assertionXml(ctx: ResponseContext, content: AssertionContent, id: string, now: number): string {
  const { citizen } = content;
  const attributes = [
    attribute(ATTRIBUTES.personalIdentityNumber, 'personalIdentityNumber', citizen.personalIdentityNumber),
    attribute(ATTRIBUTES.givenName, 'givenName', citizen.givenName),
    attribute(ATTRIBUTES.sn, 'sn', citizen.familyName),
    attribute(ATTRIBUTES.displayName, 'displayName', citizen.name),
    attribute(ATTRIBUTES.dateOfBirth, 'dateOfBirth', dateOfBirth(citizen.personalIdentityNumber)),
    content.signMessageDigest === undefined
      ? ''
      : attribute(ATTRIBUTES.signMessageDigest, 'signMessageDigest', content.signMessageDigest),
    content.sad === undefined ? '' : attribute(ATTRIBUTES.sad, 'sad', content.sad),
  ].join('');
  const sp = escapeHtml(ctx.spEntityId);
  return (
    `<saml:Assertion xmlns:saml="${SAML_NS.saml}" ID="${id}" Version="2.0" IssueInstant="${instant(now)}">` +
    `<saml:Issuer>${escapeHtml(ctx.idpEntityId)}</saml:Issuer>` +
    `<saml:Subject><saml:NameID Format="urn:oasis:names:tc:SAML:2.0:nameid-format:transient">${newId()}</saml:NameID>` +
    `<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer">` +
    `<saml:SubjectConfirmationData InResponseTo="${escapeHtml(content.subjectInResponseTo)}" ` +
    `NotOnOrAfter="${instant(now + LIFETIME_MS)}" Recipient="${escapeHtml(ctx.acsUrl)}"/>` +
    `</saml:SubjectConfirmation></saml:Subject>` +
    `<saml:Conditions NotBefore="${instant(now - 60_000)}" NotOnOrAfter="${instant(now + LIFETIME_MS)}">` +
    `<saml:AudienceRestriction><saml:Audience>${sp}</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
    `<saml:AuthnStatement AuthnInstant="${instant(now)}" SessionIndex="${newId()}"><saml:AuthnContext>` +
    `<saml:AuthnContextClassRef>${escapeHtml(content.loa)}</saml:AuthnContextClassRef>` +
    `</saml:AuthnContext></saml:AuthnStatement>` +
    `<saml:AttributeStatement>${attributes}</saml:AttributeStatement></saml:Assertion>`
  );
}

function responseXml(ctx: ResponseContext, id: string, now: number, status: string, body: string): string {
  return (
    `<samlp:Response xmlns:samlp="${SAML_NS.samlp}" xmlns:saml="${SAML_NS.saml}" ID="${id}" Version="2.0" ` +
    `IssueInstant="${instant(now)}" Destination="${escapeHtml(ctx.acsUrl)}" ` +
    `InResponseTo="${escapeHtml(ctx.inResponseTo)}"><saml:Issuer>${escapeHtml(ctx.idpEntityId)}</saml:Issuer>` +
    `<samlp:Status>${status}</samlp:Status>${body}</samlp:Response>`
  );
}

const afterIssuerOf = (id: string): { xpath: string; action: 'after' } => ({
  xpath: `//*[@ID='${id}']/*[local-name()='Issuer']`,
  action: 'after',
});

export interface SigningKeys {
  /** Signs the Response. */
  readonly response: XmlSigner;
  /** Signs the assertion (another key in attack tests); undefined leaves the assertion unsigned. */
  readonly assertion: XmlSigner | undefined;
}

/** A Success Response with one assertion, each signed as `keys` says. */
export async function successResponse(
  ctx: ResponseContext,
  content: AssertionContent,
  keys: SigningKeys,
): Promise<string> {
  const now = Date.now();
  const assertionId = newId();
  const responseId = newId();
  let xml = responseXml(
    ctx,
    responseId,
    now,
    `<samlp:StatusCode Value="${STATUS.success}"/>`,
    assertionXml(ctx, content, assertionId, now),
  );
  if (keys.assertion) {
    xml = await signXml(xml, keys.assertion, {
      referenceId: assertionId,
      location: afterIssuerOf(assertionId),
    });
  }
  return signXml(xml, keys.response, { referenceId: responseId, location: afterIssuerOf(responseId) });
}

/** A signed Response with an error status: a top-level code, a second-level code and a message. */
export function errorResponse(
  ctx: ResponseContext,
  signer: XmlSigner,
  codes: { readonly top: string; readonly second: string; readonly message: string },
): Promise<string> {
  const responseId = newId();
  const status =
    `<samlp:StatusCode Value="${codes.top}"><samlp:StatusCode Value="${codes.second}"/></samlp:StatusCode>` +
    `<samlp:StatusMessage>${escapeHtml(codes.message)}</samlp:StatusMessage>`;
  const xml = responseXml(ctx, responseId, Date.now(), status, '');
  return signXml(xml, signer, { referenceId: responseId, location: afterIssuerOf(responseId) });
}

export interface SadClaims {
  readonly iss: string;
  readonly aud: string;
  readonly sub: string;
  readonly exp: number;
  readonly irt: string;
  readonly loa: string;
  readonly reqid: string;
  readonly docs: number;
}

/** The SAD claims for a SADRequest (13 §3.2.1): valid for five minutes. */
export function sadClaims(idp: string, request: SadRequest, citizen: TestCitizen, loa: string): SadClaims {
  return {
    iss: idp,
    aud: request.requesterId,
    sub: citizen.personalIdentityNumber,
    exp: Math.floor((Date.now() + LIFETIME_MS) / 1000),
    irt: request.id,
    loa,
    reqid: request.signRequestId,
    docs: request.docCount,
  };
}

/** The SAD JWT, RS256 with the IdP's key. */
export function sadJwt(claims: SadClaims, keyPem: string): Promise<string> {
  return new SignJWT({
    seElnSadext: {
      ver: '1.0',
      irt: claims.irt,
      attr: ATTRIBUTES.personalIdentityNumber,
      loa: claims.loa,
      reqid: claims.reqid,
      docs: claims.docs,
    },
  })
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT' })
    .setIssuer(claims.iss)
    .setAudience(claims.aud)
    .setSubject(claims.sub)
    .setIssuedAt()
    .setExpirationTime(claims.exp)
    .setJti(randomBytes(18).toString('base64url'))
    .sign(createPrivateKey(keyPem));
}
