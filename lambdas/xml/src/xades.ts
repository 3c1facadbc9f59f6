/**
 * The XAdES part of a DSS-Ext sign task of SigType XML (ELN-0609 §4.1, following signservice's
 * XMLTBSDataProcessor): the e-service sends its ds:SignedInfo (canonical octets) and, for AdES BES/EPES, the
 * ds:Object holding xades:QualifyingProperties; once the certificate exists the service sets the signing
 * time and a SigningCertificateV2 naming the certificate (any v1 or v2 reference is replaced, an EPES
 * policy is kept), digests the SignedProperties (exclusive C14N), points SignedInfo's SignedProperties
 * reference at them, and returns SignedInfo canonicalized by its own method: exactly the octets signed.
 */
import { randomBytes } from 'node:crypto';
import { DIGEST_URIS, signatureMethod as methodOf, xmlDigest, type XmlDigest } from './algorithms';
import { c14nAlgorithm, canonicalize } from './c14n';
import { BadXadesTaskError } from './errors';
import { C14N, NS } from './namespaces';
import { parseXml, serializeXml } from './parse';
import { xmlDateTime } from './text';
import { childrenNS } from './signature';

export const SIGNED_PROPERTIES_TYPE = 'http://uri.etsi.org/01903#SignedProperties';

export interface XadesTaskInput {
  /** The e-service's canonical ds:SignedInfo. */
  readonly signedInfo: Buffer;
  readonly adesType: 'None' | 'BES' | 'EPES';
  /** The requested SignatureMethod URI: SignedInfo must name it. */
  readonly signatureMethod: string;
  /** The ds:Signature's Id the qualifying properties target, and the ds:Object (absent: created). */
  readonly signatureId?: string;
  readonly adesObject?: Buffer;
  readonly certificateDer: Buffer;
  readonly signingTime: Date;
}

export interface XadesTaskOutput {
  readonly signedInfo: Buffer;
  readonly adesObject?: Buffer;
}

export function updateXadesTask(input: XadesTaskInput): XadesTaskOutput {
  const signedInfo = parseXml(input.signedInfo).documentElement;
  if (signedInfo.namespaceURI !== NS.ds || signedInfo.localName !== 'SignedInfo') {
    throw new BadXadesTaskError('ToBeSignedBytes is not a ds:SignedInfo');
  }
  const method = childrenNS(signedInfo, NS.ds, 'SignatureMethod')[0]?.getAttribute('Algorithm');
  if (method !== input.signatureMethod) {
    throw new BadXadesTaskError('the SignedInfo names another signature method than the request');
  }
  const c14n = c14nAlgorithm(
    childrenNS(signedInfo, NS.ds, 'CanonicalizationMethod')[0]?.getAttribute('Algorithm') ?? '',
  );
  const references = childrenNS(signedInfo, NS.ds, 'Reference');
  const propertyReferences = references.filter((r) => r.getAttribute('Type') === SIGNED_PROPERTIES_TYPE);
  if (references.length === 0 || propertyReferences.length > 1) {
    throw new BadXadesTaskError('the SignedInfo needs references, and at most one to SignedProperties');
  }
  if (input.adesType === 'None') return { signedInfo: input.signedInfo };
  if (!input.signatureId) throw new BadXadesTaskError('an XAdES task needs the signature Id');
  const digest = methodOf(input.signatureMethod).digest;
  const object = qualifyingObject(input);
  const properties = signedProperties(object, input, digest);
  const id = properties.getAttribute('Id')!;
  const reference = propertyReferences[0] ?? appendElement(signedInfo, NS.ds, 'Reference');
  setReference(reference, id, digest, xmlDigest(digest, canonicalize(properties, C14N.exclusive)));
  return {
    signedInfo: Buffer.from(canonicalize(signedInfo, c14n), 'utf8'),
    adesObject: Buffer.from(serializeXml(object), 'utf8'),
  };
}

/** The ds:Object with xades:QualifyingProperties targeting the signature. */
function qualifyingObject(input: XadesTaskInput): Element {
  const object =
    input.adesObject === undefined || input.adesObject.length === 0
      ? parseXml(`<ds:Object xmlns:ds="${NS.ds}"/>`).documentElement
      : parseXml(input.adesObject).documentElement;
  if (object.namespaceURI !== NS.ds || object.localName !== 'Object') {
    throw new BadXadesTaskError('AdESObjectBytes is not a ds:Object');
  }
  const qualifying =
    childrenNS(object, NS.xades, 'QualifyingProperties')[0] ??
    appendElement(object, NS.xades, 'QualifyingProperties', 'xades');
  qualifying.setAttribute('Target', `#${input.signatureId}`);
  return object;
}

/** SignedProperties with an Id, its SignedSignatureProperties starting with SigningTime and SigningCertificateV2. */
function signedProperties(object: Element, input: XadesTaskInput, digest: XmlDigest): Element {
  const qualifying = childrenNS(object, NS.xades, 'QualifyingProperties')[0]!;
  const properties =
    childrenNS(qualifying, NS.xades, 'SignedProperties')[0] ??
    prependElement(qualifying, NS.xades, 'SignedProperties');
  if (!properties.getAttribute('Id'))
    properties.setAttribute('Id', `xades-${randomBytes(16).toString('hex')}`);
  const signature =
    childrenNS(properties, NS.xades, 'SignedSignatureProperties')[0] ??
    prependElement(properties, NS.xades, 'SignedSignatureProperties');
  if (
    input.adesType === 'EPES' &&
    childrenNS(signature, NS.xades, 'SignaturePolicyIdentifier').length === 0
  ) {
    throw new BadXadesTaskError('an EPES task needs a SignaturePolicyIdentifier');
  }
  for (const name of ['SigningTime', 'SigningCertificate', 'SigningCertificateV2']) {
    for (const old of childrenNS(signature, NS.xades, name)) signature.removeChild(old);
  }
  // The schema's sequence: SigningTime, SigningCertificate(V2), then policy, place and role.
  const certificate = prependElement(signature, NS.xades, 'SigningCertificateV2');
  const time = prependElement(signature, NS.xades, 'SigningTime');
  time.appendChild(time.ownerDocument.createTextNode(xmlDateTime(input.signingTime)));
  const cert = appendElement(certificate, NS.xades, 'Cert');
  const certDigest = appendElement(cert, NS.xades, 'CertDigest');
  appendElement(certDigest, NS.ds, 'DigestMethod').setAttribute('Algorithm', DIGEST_URIS[digest]);
  const value = appendElement(certDigest, NS.ds, 'DigestValue');
  value.appendChild(value.ownerDocument.createTextNode(xmlDigest(digest, input.certificateDer)));
  return properties;
}

/** The SignedProperties reference: its target, exclusive C14N, the digest method and value. */
function setReference(reference: Element, id: string, digest: XmlDigest, value: string): void {
  reference.setAttribute('Type', SIGNED_PROPERTIES_TYPE);
  reference.setAttribute('URI', `#${id}`);
  while (reference.firstChild) reference.removeChild(reference.firstChild);
  const transforms = appendElement(reference, NS.ds, 'Transforms');
  appendElement(transforms, NS.ds, 'Transform').setAttribute('Algorithm', C14N.exclusive);
  appendElement(reference, NS.ds, 'DigestMethod').setAttribute('Algorithm', DIGEST_URIS[digest]);
  appendElement(reference, NS.ds, 'DigestValue').appendChild(reference.ownerDocument.createTextNode(value));
}

/** A new child in a namespace, with the prefix its parent uses for it (or the given one). */
function createChild(parent: Element, ns: string, name: string, fallbackPrefix: string): Element {
  const prefix = parent.namespaceURI === ns ? parent.prefix : (parent.lookupPrefix(ns) ?? fallbackPrefix);
  return parent.ownerDocument.createElementNS(ns, prefix ? `${prefix}:${name}` : name);
}

function appendElement(
  parent: Element,
  ns: string,
  name: string,
  fallbackPrefix = ns === NS.ds ? 'ds' : 'xades',
): Element {
  return parent.appendChild(createChild(parent, ns, name, fallbackPrefix)) as Element;
}

function prependElement(parent: Element, ns: string, name: string): Element {
  return parent.insertBefore(
    createChild(parent, ns, name, ns === NS.ds ? 'ds' : 'xades'),
    firstElement(parent),
  ) as Element;
}

function firstElement(parent: Element): Node | null {
  let node = parent.firstChild;
  while (node !== null && node.nodeType !== 1) node = node.nextSibling;
  return node;
}
