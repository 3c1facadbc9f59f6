/** The IdP's metadata (02 §2.1.3, 14 §2.2, 13) and what it reads from the SP metadata it trusts. */
import { X509Certificate } from 'node:crypto';
import { childrenNS, parseXml } from '@pipeline/xml';
import { escapeHtml } from '../../shared/html';
import { certBase64 } from './keys';
import { ATTRIBUTES, POST_BINDING, SAML_NS, SUPPORTED_LOAS } from './saml';

const SCAL2 = 'http://id.elegnamnden.se/sprop/1.0/scal2';

export function idpMetadata(entityId: string, ssoUrl: string, certPem: string): string {
  const values = (items: readonly string[]): string =>
    items.map((v) => `<saml:AttributeValue>${escapeHtml(v)}</saml:AttributeValue>`).join('');
  return `<?xml version="1.0" encoding="UTF-8"?>
<md:EntityDescriptor xmlns:md="${SAML_NS.md}" xmlns:mdattr="${SAML_NS.mdattr}" xmlns:saml="${SAML_NS.saml}" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" xmlns:psc="${SAML_NS.psc}" entityID="${escapeHtml(entityId)}">
<md:Extensions><mdattr:EntityAttributes>
<saml:Attribute Name="urn:oasis:names:tc:SAML:attribute:assurance-certification" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:uri">${values(SUPPORTED_LOAS)}</saml:Attribute>
<saml:Attribute Name="http://macedir.org/entity-category" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:uri">${values([SCAL2])}</saml:Attribute>
</mdattr:EntityAttributes></md:Extensions>
<md:IDPSSODescriptor WantAuthnRequestsSigned="true" protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
<md:Extensions><psc:RequestedPrincipalSelection><psc:MatchValue Name="${ATTRIBUTES.personalIdentityNumber}"/></psc:RequestedPrincipalSelection></md:Extensions>
<md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${certBase64(certPem)}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>
<md:NameIDFormat>urn:oasis:names:tc:SAML:2.0:nameid-format:transient</md:NameIDFormat>
<md:SingleSignOnService Binding="${POST_BINDING}" Location="${escapeHtml(ssoUrl)}"/>
</md:IDPSSODescriptor>
</md:EntityDescriptor>
`;
}

export interface TrustedSp {
  readonly entityId: string;
  readonly signingCerts: readonly X509Certificate[];
  /** HTTP-POST AssertionConsumerService locations, the default (isDefault or lowest index) first. */
  readonly acsUrls: readonly string[];
}

export class SpMetadataError extends Error {
  public override readonly name = 'SpMetadataError';
}

/** Reads an SP's md:EntityDescriptor: entityID, signing certificates, HTTP-POST ACS locations. */
export function readSpMetadata(xml: string): TrustedSp {
  const root = parseXml(xml).documentElement!;
  if (root.namespaceURI !== SAML_NS.md || root.localName !== 'EntityDescriptor') {
    throw new SpMetadataError('SP metadata must be one md:EntityDescriptor');
  }
  const sp = childrenNS(root, SAML_NS.md, 'SPSSODescriptor')[0];
  const entityId = root.getAttribute('entityID') ?? '';
  if (sp === undefined || entityId === '') throw new SpMetadataError('no SPSSODescriptor or entityID');
  const signingCerts = childrenNS(sp, SAML_NS.md, 'KeyDescriptor')
    .filter((k) => (k.getAttribute('use') ?? 'signing') === 'signing' || k.getAttribute('use') === '')
    .flatMap((k) =>
      Array.from(k.getElementsByTagNameNS('http://www.w3.org/2000/09/xmldsig#', 'X509Certificate')),
    )
    .map((c) => new X509Certificate(Buffer.from((c.textContent ?? '').replace(/\s+/g, ''), 'base64')));
  const acs = childrenNS(sp, SAML_NS.md, 'AssertionConsumerService')
    .filter((a) => a.getAttribute('Binding') === POST_BINDING)
    .map((a) => ({
      url: a.getAttribute('Location') ?? '',
      rank: a.getAttribute('isDefault') === 'true' ? -1 : Number(a.getAttribute('index') ?? 0),
    }))
    .sort((a, b) => a.rank - b.rank);
  if (signingCerts.length === 0 || acs.length === 0) {
    throw new SpMetadataError(`SP ${entityId} has no signing certificate or no HTTP-POST ACS`);
  }
  return { entityId, signingCerts, acsUrls: acs.map((a) => a.url) };
}
