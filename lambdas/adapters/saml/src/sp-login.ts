/**
 * The SAML 2.0 service provider side of the DSS-Ext door, in the Swedish eID framework's profile for
 * signature services (ELN-0602 §5–§7): the AuthnRequest (HTTP-POST binding, signed, ForceAuthn, the
 * SignMessage passed on unchanged, PrincipalSelection, the SADRequest, RequesterID), the Response read
 * from its signed octets, and our SP metadata. The XML is written here and signed through an XmlSigner
 * (@pipeline/xml), so the SP key can live in the HSM; node-saml signs only with a private key in memory.
 */
import { AssertionError } from '@pipeline/core/identity';
import {
  childrenNS,
  escapeXml,
  NS,
  parseXml,
  serializeXml,
  signXml,
  verifyXml,
  xmlDateTime,
  type XmlSigner,
} from '@pipeline/xml';
import type { IdentityProviderEntry } from './metadata';
import { ENTITY_CATEGORY, POST_BINDING, SAML_NS } from './namespaces';

const { saml, samlp, md, mdattr, psc } = SAML_NS;
const SAP = 'http://id.elegnamnden.se/csig/1.1/sap/ns';
/** The entity category of a signature service (ELN-0603 §4.1.2). */
export const SIGSERVICE_CATEGORY = 'http://id.elegnamnden.se/st/1.0/sigservice';

export interface ServiceProvider {
  readonly entityId: string;
  readonly acsUrl: string;
  readonly signer: XmlSigner;
}

export interface AuthnRequestInput {
  /** The AuthnRequest ID (authnRequestId of the request's binding). */
  readonly id: string;
  readonly issueInstant: Date;
  readonly idp: IdentityProviderEntry;
  /** The levels of assurance asked for (exact comparison). */
  readonly loa: readonly string[];
  /** The e-service the citizen signs for (Scoping/RequesterID). */
  readonly requesterId: string;
  /** The SignRequest's csig:SignMessage element, passed on unchanged (ELN-0602 §7.1.1). */
  readonly signMessageXml?: string;
  /** Signer attributes; only those the identity provider takes in a PrincipalSelection are sent. */
  readonly principalSelection?: readonly { readonly name: string; readonly value: string }[];
  /** For a qualified request: the SADRequest (ELN-0613 §3.1). */
  readonly sadRequest?: { readonly id: string; readonly signRequestId: string; readonly docCount: number };
  readonly relayState: string;
}

export interface PostForm {
  readonly action: string;
  readonly fields: Readonly<Record<string, string>>;
}

/** The signed AuthnRequest as the fields of a form posted to the identity provider. */
export async function authnRequestForm(input: AuthnRequestInput, sp: ServiceProvider): Promise<PostForm> {
  const selection = (input.principalSelection ?? []).filter((p) =>
    input.idp.principalSelection.includes(p.name),
  );
  const extensions = [
    input.signMessageXml ?? '',
    selection.length === 0
      ? ''
      : `<psc:PrincipalSelection xmlns:psc="${psc}">${selection
          .map((p) => `<psc:MatchValue Name="${escapeXml(p.name)}">${escapeXml(p.value)}</psc:MatchValue>`)
          .join('')}</psc:PrincipalSelection>`,
    input.sadRequest === undefined
      ? ''
      : `<sap:SADRequest xmlns:sap="${SAP}" ID="${escapeXml(input.sadRequest.id)}"><sap:RequesterID>${escapeXml(sp.entityId)}</sap:RequesterID>` +
        `<sap:SignRequestID>${escapeXml(input.sadRequest.signRequestId)}</sap:SignRequestID>` +
        `<sap:DocCount>${input.sadRequest.docCount}</sap:DocCount><sap:RequestedVersion>1.0</sap:RequestedVersion></sap:SADRequest>`,
  ].join('');
  const xml =
    `<samlp:AuthnRequest xmlns:samlp="${samlp}" xmlns:saml="${saml}" ID="${escapeXml(input.id)}" Version="2.0"` +
    ` IssueInstant="${xmlDateTime(input.issueInstant)}" Destination="${escapeXml(input.idp.ssoPostUrl)}" ForceAuthn="true"` +
    ` AssertionConsumerServiceURL="${escapeXml(sp.acsUrl)}" ProtocolBinding="${POST_BINDING}">` +
    `<saml:Issuer>${escapeXml(sp.entityId)}</saml:Issuer>` +
    (extensions === '' ? '' : `<samlp:Extensions>${extensions}</samlp:Extensions>`) +
    '<samlp:NameIDPolicy Format="urn:oasis:names:tc:SAML:2.0:nameid-format:transient" AllowCreate="false"/>' +
    `<samlp:RequestedAuthnContext Comparison="exact">${input.loa
      .map((l) => `<saml:AuthnContextClassRef>${escapeXml(l)}</saml:AuthnContextClassRef>`)
      .join('')}</samlp:RequestedAuthnContext>` +
    `<samlp:Scoping><samlp:RequesterID>${escapeXml(input.requesterId)}</samlp:RequesterID></samlp:Scoping>` +
    '</samlp:AuthnRequest>';
  // The schema puts the signature right after the Issuer.
  const signed = await signXml(xml, sp.signer, {
    referenceId: input.id,
    location: { xpath: "/*/*[local-name()='Issuer']", action: 'after' },
  });
  return {
    action: input.idp.ssoPostUrl,
    fields: { SAMLRequest: Buffer.from(signed, 'utf8').toString('base64'), RelayState: input.relayState },
  };
}

export interface ResponseContext {
  readonly identityProviders: ReadonlyMap<string, IdentityProviderEntry>;
  /** The identity provider the request named. */
  readonly expectedIssuer: string;
  /** The AuthnRequest's ID. */
  readonly expectedInResponseTo: string;
  readonly acsUrl: string;
}

/** Why an identity provider answered without an assertion (ELN-0602 §6.4, ELN-0603 §3.1.4). */
export type LoginRefusal = 'cancel' | 'fraud' | 'unknown-principal' | 'no-authn-context' | 'failed';

export type SamlResponse =
  | { readonly kind: 'assertion'; readonly assertionXml: string }
  | { readonly kind: 'refused'; readonly reason: LoginRefusal };

const STATUS = 'urn:oasis:names:tc:SAML:2.0:status:';
const SECOND_LEVEL: ReadonlyArray<readonly [string, LoginRefusal]> = [
  ['http://id.elegnamnden.se/status/1.0/cancel', 'cancel'],
  ['http://id.elegnamnden.se/status/1.0/fraud', 'fraud'],
  ['http://id.elegnamnden.se/status/1.0/possibleFraud', 'fraud'],
  [`${STATUS}UnknownPrincipal`, 'unknown-principal'],
  [`${STATUS}NoAuthnContext`, 'no-authn-context'],
];

/**
 * Reads a posted SAMLResponse: signed by the identity provider the request named (a signing certificate of
 * it in the metadata, the Response's ID referenced), for our ACS, answering our AuthnRequest. The assertion
 * is returned as its own octets, from the Response's signed octets, for verifySamlAssertion (it must be
 * signed itself). Throws an AssertionError for anything forged or misdirected.
 */
export function readSamlResponse(encoded: string, ctx: ResponseContext): SamlResponse {
  const idp = ctx.identityProviders.get(ctx.expectedIssuer);
  if (idp === undefined)
    throw new AssertionError('ASSERTION_ISSUER_UNTRUSTED', 'the identity provider is not in the federation');
  const xml = Buffer.from(encoded, 'base64').toString('utf8');
  let response: Element;
  try {
    const root = parseXml(xml).documentElement;
    const verified = verifyXml(xml, {
      trusted: idp.signingCertificates,
      referenceId: root.getAttribute('ID') ?? '',
      signature: (d) => childrenNS(d.documentElement, NS.ds, 'Signature')[0],
      otherSignatures: 'allow',
    });
    response = parseXml(verified.signedXml).documentElement;
  } catch {
    throw new AssertionError(
      'ASSERTION_SIGNATURE_INVALID',
      'the SAML response is not signed by the identity provider',
    );
  }
  if (response.namespaceURI !== samlp || response.localName !== 'Response') {
    throw new AssertionError('ASSERTION_MALFORMED', 'the message is not a SAML response');
  }
  if ((childrenNS(response, saml, 'Issuer')[0]?.textContent ?? '').trim() !== ctx.expectedIssuer) {
    throw new AssertionError('ASSERTION_ISSUER_UNTRUSTED', 'the response is from another identity provider');
  }
  if (response.getAttribute('Destination') !== ctx.acsUrl) {
    throw new AssertionError('ASSERTION_AUDIENCE_MISMATCH', 'the response is for another recipient');
  }
  if (response.getAttribute('InResponseTo') !== ctx.expectedInResponseTo) {
    throw new AssertionError(
      'ASSERTION_BINDING_MISMATCH',
      'the response answers another authentication request',
    );
  }
  const status = childrenNS(response, samlp, 'Status')[0];
  const top = status === undefined ? undefined : childrenNS(status, samlp, 'StatusCode')[0];
  if (top?.getAttribute('Value') !== `${STATUS}Success`) {
    const second =
      top === undefined ? [] : childrenNS(top, samlp, 'StatusCode').map((c) => c.getAttribute('Value'));
    const reason = SECOND_LEVEL.find(([code]) => second.includes(code))?.[1] ?? 'failed';
    return { kind: 'refused', reason };
  }
  const assertions = childrenNS(response, saml, 'Assertion');
  if (assertions.length !== 1 || childrenNS(response, saml, 'EncryptedAssertion').length > 0) {
    throw new AssertionError(
      'ASSERTION_MALFORMED',
      'the response must carry exactly one unencrypted assertion',
    );
  }
  return { kind: 'assertion', assertionXml: serializeXml(assertions[0]!) };
}

/** Our SP metadata: a signature service that signs its requests and wants signed assertions. */
export function spMetadataXml(
  sp: Omit<ServiceProvider, 'signer'> & { readonly signingCertificateDer: Buffer },
): string {
  return (
    `<md:EntityDescriptor xmlns:md="${md}" xmlns:mdattr="${mdattr}" xmlns:saml="${saml}" entityID="${escapeXml(sp.entityId)}">` +
    `<md:Extensions><mdattr:EntityAttributes><saml:Attribute Name="${ENTITY_CATEGORY}" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:uri">` +
    `<saml:AttributeValue>${SIGSERVICE_CATEGORY}</saml:AttributeValue></saml:Attribute></mdattr:EntityAttributes></md:Extensions>` +
    '<md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol" AuthnRequestsSigned="true" WantAssertionsSigned="true">' +
    `<md:KeyDescriptor use="signing"><ds:KeyInfo xmlns:ds="${NS.ds}"><ds:X509Data><ds:X509Certificate>` +
    `${sp.signingCertificateDer.toString('base64')}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>` +
    `<md:AssertionConsumerService Binding="${POST_BINDING}" Location="${escapeXml(sp.acsUrl)}" index="0" isDefault="true"/>` +
    '</md:SPSSODescriptor></md:EntityDescriptor>'
  );
}
