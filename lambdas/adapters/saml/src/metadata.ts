/**
 * Federation metadata (SAML 2.0 metadata with the Swedish eID framework's entity attributes, ELN-0602 §2):
 * the identity providers a sign request may name, their signing certificates, their single sign-on POST
 * endpoint, the levels of assurance they are certified for and what they accept in a PrincipalSelection.
 * The metadata file is signed by the federation operator: only a signature by a configured operator
 * certificate makes its contents trusted.
 */
import { X509Certificate } from 'node:crypto';
import { childrenNS, NS, parseXml, verifyXml } from '@pipeline/xml';
import { ASSURANCE_CERTIFICATION, ENTITY_CATEGORY, POST_BINDING, SAML_NS } from './namespaces';

const { md, mdattr, saml, psc } = SAML_NS;

export interface IdentityProviderEntry {
  readonly entityId: string;
  readonly signingCertificates: readonly X509Certificate[];
  /** HTTP-POST SingleSignOnService Location. */
  readonly ssoPostUrl: string;
  readonly assuranceCertifications: readonly string[];
  readonly entityCategories: readonly string[];
  /** Attribute names the identity provider takes in a psc:PrincipalSelection. */
  readonly principalSelection: readonly string[];
}

/** Thrown when the metadata is unsigned, signed by someone else, or not metadata. */
export class MetadataUntrustedError extends Error {
  public override readonly name = 'MetadataUntrustedError';
}

/** Reads signed federation metadata; only identity providers with a POST endpoint and a signing key. */
export function readFederationMetadata(
  xml: string,
  operatorCertificates: readonly X509Certificate[],
): ReadonlyMap<string, IdentityProviderEntry> {
  const root = parseXml(xml).documentElement;
  const id = root.getAttribute('ID') ?? '';
  let signed: Element;
  try {
    const verified = verifyXml(xml, {
      trusted: operatorCertificates,
      referenceId: id,
      signature: (d) => childrenNS(d.documentElement, NS.ds, 'Signature')[0],
    });
    signed = parseXml(verified.signedXml).documentElement;
  } catch (err) {
    throw new MetadataUntrustedError('the federation metadata is not signed by the federation operator', {
      cause: err,
    });
  }
  const entities =
    signed.namespaceURI === md && signed.localName === 'EntitiesDescriptor'
      ? descendants(signed, md, 'EntityDescriptor')
      : signed.namespaceURI === md && signed.localName === 'EntityDescriptor'
        ? [signed]
        : [];
  const entries = new Map<string, IdentityProviderEntry>();
  for (const entity of entities) {
    const entry = identityProviderOf(entity);
    if (entry !== undefined) entries.set(entry.entityId, entry);
  }
  return entries;
}

function identityProviderOf(entity: Element): IdentityProviderEntry | undefined {
  const idp = childrenNS(entity, md, 'IDPSSODescriptor')[0];
  if (idp === undefined) return undefined;
  const ssoPostUrl = childrenNS(idp, md, 'SingleSignOnService')
    .find((s) => s.getAttribute('Binding') === POST_BINDING)
    ?.getAttribute('Location');
  const signingCertificates = childrenNS(idp, md, 'KeyDescriptor')
    .filter((k) => (k.getAttribute('use') || 'signing') === 'signing')
    .flatMap((k) => descendants(k, NS.ds, 'X509Certificate'))
    .map((c) => new X509Certificate(Buffer.from((c.textContent ?? '').replace(/\s+/g, ''), 'base64')));
  if (!ssoPostUrl || signingCertificates.length === 0) return undefined;
  const attributes = childrenNS(entity, md, 'Extensions').flatMap((e) =>
    childrenNS(e, mdattr, 'EntityAttributes'),
  );
  const values = (name: string): string[] =>
    attributes
      .flatMap((a) => childrenNS(a, saml, 'Attribute'))
      .filter((a) => a.getAttribute('Name') === name)
      .flatMap((a) => childrenNS(a, saml, 'AttributeValue'))
      .map((v) => (v.textContent ?? '').trim());
  const principalSelection = childrenNS(idp, md, 'Extensions')
    .flatMap((e) => childrenNS(e, psc, 'RequestedPrincipalSelection'))
    .flatMap((r) => childrenNS(r, psc, 'MatchValue'))
    .map((m) => m.getAttribute('Name') ?? '')
    .filter((name) => name !== '');
  return {
    entityId: entity.getAttribute('entityID') ?? '',
    signingCertificates,
    ssoPostUrl,
    assuranceCertifications: values(ASSURANCE_CERTIFICATION),
    entityCategories: values(ENTITY_CATEGORY),
    principalSelection,
  };
}

function descendants(parent: Element, ns: string, name: string): Element[] {
  return Array.from(parent.getElementsByTagNameNS(ns, name) as unknown as ArrayLike<Element>);
}
