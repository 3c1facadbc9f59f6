/**
 * The SAML 2.0 names the local SAML IdP speaks (Swedish eID framework: 02, 04, 13, 14) and the pure pieces:
 * the signMessageDigest value (04 §3.2.4) and reading a verified AuthnRequest's parts.
 */
import { createHash } from 'node:crypto';
import { childrenNS } from '@pipeline/xml';
import { LOA } from '../idp/profile';

export const SAML_NS = {
  md: 'urn:oasis:names:tc:SAML:2.0:metadata',
  mdattr: 'urn:oasis:names:tc:SAML:metadata:attribute',
  saml: 'urn:oasis:names:tc:SAML:2.0:assertion',
  samlp: 'urn:oasis:names:tc:SAML:2.0:protocol',
  csig: 'http://id.elegnamnden.se/csig/1.1/dss-ext/ns',
  sap: 'http://id.elegnamnden.se/csig/1.1/sap/ns',
  psc: 'http://id.swedenconnect.se/authn/1.0/principal-selection/ns',
} as const;

export const POST_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST';

export const ATTRIBUTES = {
  personalIdentityNumber: 'urn:oid:1.2.752.29.4.13',
  givenName: 'urn:oid:2.5.4.42',
  sn: 'urn:oid:2.5.4.4',
  displayName: 'urn:oid:2.16.840.1.113730.3.1.241',
  dateOfBirth: 'urn:oid:1.3.6.1.5.5.7.9.1',
  sad: 'urn:oid:1.2.752.201.3.12',
  signMessageDigest: 'urn:oid:1.2.752.201.3.14',
} as const;

export const STATUS = {
  success: 'urn:oasis:names:tc:SAML:2.0:status:Success',
  requester: 'urn:oasis:names:tc:SAML:2.0:status:Requester',
  responder: 'urn:oasis:names:tc:SAML:2.0:status:Responder',
  noAuthnContext: 'urn:oasis:names:tc:SAML:2.0:status:NoAuthnContext',
  unknownPrincipal: 'urn:oasis:names:tc:SAML:2.0:status:UnknownPrincipal',
  cancel: 'http://id.elegnamnden.se/status/1.0/cancel',
} as const;

/** The levels this IdP is certified for (its metadata's assurance-certification), in preference order. */
export const SUPPORTED_LOAS: readonly string[] = [LOA.loa3, LOA.loa2];

const SHA256_URI = 'http://www.w3.org/2001/04/xmlenc#sha256';

/** 04 §3.2.4: the digest of the message octets shown (the base64-decoded csig:Message), with its URI. */
export function signMessageDigest(messageBase64: string): string {
  const octets = Buffer.from(messageBase64.replace(/\s+/g, ''), 'base64');
  return `${SHA256_URI};${createHash('sha256').update(octets).digest('base64')}`;
}

/** An AuthnRequest this IdP does not serve (HTTP 400 with the message on an HTML page). */
export class AuthnRequestRefusedError extends Error {
  public override readonly name = 'AuthnRequestRefusedError';
}

export interface SignMessage {
  readonly messageBase64: string;
  readonly text: string;
  readonly mimeType: string;
  readonly mustShow: boolean;
}

export interface SadRequest {
  readonly id: string;
  readonly requesterId: string;
  readonly signRequestId: string;
  readonly docCount: number;
  readonly version: string;
}

export interface AuthnRequestParts {
  readonly id: string;
  readonly issuer: string;
  readonly forceAuthn: boolean;
  readonly acsUrl: string | undefined;
  readonly requestedLoas: readonly string[];
  readonly signMessage: SignMessage | undefined;
  readonly sadRequest: SadRequest | undefined;
  /** The personal identity number of psc:PrincipalSelection, if any. */
  readonly principal: string | undefined;
}

const text = (element: Element | undefined): string => element?.textContent?.trim() ?? '';
const first = (parent: Element | undefined, ns: string, name: string): Element | undefined =>
  parent === undefined ? undefined : childrenNS(parent, ns, name)[0];

/** The ID and Issuer of a not yet verified AuthnRequest: only to find the SP and the signed reference. */
export function requestOrigin(root: Element): { readonly id: string; readonly issuer: string } {
  if (root.namespaceURI !== SAML_NS.samlp || root.localName !== 'AuthnRequest') {
    throw new AuthnRequestRefusedError('SAMLRequest is not a samlp:AuthnRequest');
  }
  return { id: root.getAttribute('ID') ?? '', issuer: text(first(root, SAML_NS.saml, 'Issuer')) };
}

/** Reads the parts of an AuthnRequest (the root of verified, signed octets). */
export function readAuthnRequest(root: Element): AuthnRequestParts {
  if (root.namespaceURI !== SAML_NS.samlp || root.localName !== 'AuthnRequest') {
    throw new AuthnRequestRefusedError('SAMLRequest is not a samlp:AuthnRequest');
  }
  const extensions = first(root, SAML_NS.samlp, 'Extensions');
  const signMessageElement = first(extensions, SAML_NS.csig, 'SignMessage');
  let signMessage: SignMessage | undefined;
  if (signMessageElement !== undefined) {
    if (first(signMessageElement, SAML_NS.csig, 'EncryptedMessage') !== undefined) {
      throw new AuthnRequestRefusedError('an encrypted SignMessage is not supported by this local IdP');
    }
    const messageBase64 = text(first(signMessageElement, SAML_NS.csig, 'Message')).replace(/\s+/g, '');
    if (messageBase64 === '') throw new AuthnRequestRefusedError('the SignMessage has no Message');
    signMessage = {
      messageBase64,
      text: Buffer.from(messageBase64, 'base64').toString('utf8'),
      mimeType: signMessageElement.getAttribute('MimeType') || 'text',
      mustShow: signMessageElement.getAttribute('MustShow') === 'true',
    };
  }
  const sad = first(extensions, SAML_NS.sap, 'SADRequest');
  const sadRequest: SadRequest | undefined =
    sad === undefined
      ? undefined
      : {
          id: sad.getAttribute('ID') ?? '',
          requesterId: text(first(sad, SAML_NS.sap, 'RequesterID')),
          signRequestId: text(first(sad, SAML_NS.sap, 'SignRequestID')),
          docCount: Number(text(first(sad, SAML_NS.sap, 'DocCount'))),
          version: text(first(sad, SAML_NS.sap, 'RequestedVersion')) || '1.0',
        };
  if (sadRequest && (sadRequest.id === '' || !Number.isInteger(sadRequest.docCount))) {
    throw new AuthnRequestRefusedError('the SADRequest lacks its ID or a whole DocCount');
  }
  const selection = first(extensions, SAML_NS.psc, 'PrincipalSelection');
  const principal = selection
    ? childrenNS(selection, SAML_NS.psc, 'MatchValue').find(
        (m) => m.getAttribute('Name') === ATTRIBUTES.personalIdentityNumber,
      )
    : undefined;
  const requested = first(root, SAML_NS.samlp, 'RequestedAuthnContext');
  return {
    id: root.getAttribute('ID') ?? '',
    issuer: text(first(root, SAML_NS.saml, 'Issuer')),
    forceAuthn: root.getAttribute('ForceAuthn') === 'true',
    acsUrl: root.getAttribute('AssertionConsumerServiceURL') || undefined,
    requestedLoas: requested ? childrenNS(requested, SAML_NS.saml, 'AuthnContextClassRef').map(text) : [],
    signMessage,
    sadRequest,
    principal: principal ? text(principal) : undefined,
  };
}

/** The first requested level this IdP supports; loa3 when none was requested; undefined when none fits. */
export function chooseLoa(requested: readonly string[]): string | undefined {
  if (requested.length === 0) return LOA.loa3;
  return requested.find((loa) => SUPPORTED_LOAS.includes(loa));
}
