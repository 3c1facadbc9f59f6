/**
 * For tests: SAML evidence as an identity provider and a federation operator would make it, signed by
 * xmlsec1 (not by this repository's XML code): throw-away keys, an assertion in the Swedish eID
 * framework's shape, and federation metadata naming the identity provider.
 */
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestKey {
  readonly keyFile: string;
  readonly certFile: string;
  readonly keyPem: string;
  readonly certPem: string;
  readonly certificate: X509Certificate;
}

/** A directory for keys and files, removed by the returned function. */
export function testKeyDirectory(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'saml-test-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A self-signed key and certificate made by openssl: RSA-2048, or EC P-256. */
export function makeTestKey(dir: string, name: string, algorithm: 'rsa' | 'ec' = 'rsa'): TestKey {
  const keyFile = join(dir, `${name}.key`);
  const certFile = join(dir, `${name}.crt`);
  const keyArgs =
    algorithm === 'rsa' ? ['-newkey', 'rsa:2048'] : ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256'];
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      ...keyArgs,
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '1',
      '-subj',
      `/C=SE/CN=${name}`,
    ],
    { stdio: 'ignore' },
  );
  const certPem = readFileSync(certFile, 'utf8');
  return {
    keyFile,
    certFile,
    keyPem: readFileSync(keyFile, 'utf8'),
    certPem,
    certificate: new X509Certificate(certPem),
  };
}

const SIGNATURE_TEMPLATE =
  '<ds:Signature xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:SignedInfo>' +
  '<ds:CanonicalizationMethod Algorithm="http://www.w3.org/2001/10/xml-exc-c14n#"/>' +
  '<ds:SignatureMethod Algorithm="http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"/>' +
  '<ds:Reference URI="#ID_REF"><ds:Transforms><ds:Transform Algorithm="http://www.w3.org/2000/09/xmldsig#enveloped-signature"/>' +
  '<ds:Transform Algorithm="http://www.w3.org/2001/10/xml-exc-c14n#"/></ds:Transforms>' +
  '<ds:DigestMethod Algorithm="http://www.w3.org/2001/04/xmlenc#sha256"/><ds:DigestValue/></ds:Reference>' +
  '</ds:SignedInfo><ds:SignatureValue/><ds:KeyInfo><ds:X509Data/></ds:KeyInfo></ds:Signature>';

/** The `<!--SIG-->` placeholder of `xml` becomes xmlsec1's signature of the element with ID `id`. */
export function xmlsec1SignById(dir: string, xml: string, id: string, element: string, key: TestKey): string {
  const file = join(dir, `sign-${id.replace(/[^A-Za-z0-9]/g, '')}.xml`);
  writeFileSync(file, xml.replace('<!--SIG-->', SIGNATURE_TEMPLATE.replace('ID_REF', id)));
  return execFileSync(
    'xmlsec1',
    ['--sign', '--id-attr:ID', element, '--privkey-pem', `${key.keyFile},${key.certFile}`, file],
    {
      encoding: 'utf8',
    },
  );
}

/**
 * Whether xmlsec1 verifies the document's signature with the certificate (PEM file); `idAttribute` names
 * the ID attribute of the referenced element (`ID:<element>`, `Id:<ns>:<element>`).
 */
export function xmlsec1Verifies(dir: string, xml: string, certFile: string, idAttribute?: string): boolean {
  const file = join(dir, 'verify.xml');
  writeFileSync(file, xml);
  const id =
    idAttribute === undefined
      ? []
      : [`--id-attr:${idAttribute.split(':')[0]}`, idAttribute.slice(idAttribute.indexOf(':') + 1)];
  try {
    execFileSync('xmlsec1', ['--verify', ...id, '--pubkey-cert-pem', certFile, file], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
}

export interface AssertionOptions {
  readonly id?: string;
  readonly issuer: string;
  readonly inResponseTo: string;
  readonly recipient: string;
  readonly audience: string;
  readonly now: number;
  readonly authnInstant?: number;
  readonly loa?: string;
  /** SAML attribute name → value (NameFormat uri). */
  readonly attributes: Readonly<Record<string, string>>;
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** An unsigned assertion with the `<!--SIG-->` placeholder after its Issuer. */
export function samlAssertionXml(o: AssertionOptions): string {
  const attributes = Object.entries(o.attributes)
    .map(
      ([name, value]) =>
        `<saml:Attribute Name="${name}" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:uri"><saml:AttributeValue>${value}</saml:AttributeValue></saml:Attribute>`,
    )
    .join('');
  return (
    `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${o.id ?? '_a1'}" Version="2.0" IssueInstant="${iso(o.now)}">` +
    `<saml:Issuer>${o.issuer}</saml:Issuer><!--SIG-->` +
    '<saml:Subject><saml:NameID Format="urn:oasis:names:tc:SAML:2.0:nameid-format:transient">t1</saml:NameID>' +
    '<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer">' +
    `<saml:SubjectConfirmationData InResponseTo="${o.inResponseTo}" Recipient="${o.recipient}" NotOnOrAfter="${iso(o.now + 300_000)}"/>` +
    '</saml:SubjectConfirmation></saml:Subject>' +
    `<saml:Conditions NotBefore="${iso(o.now - 5_000)}" NotOnOrAfter="${iso(o.now + 300_000)}">` +
    `<saml:AudienceRestriction><saml:Audience>${o.audience}</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
    `<saml:AuthnStatement AuthnInstant="${iso(o.authnInstant ?? o.now - 2_000)}"><saml:AuthnContext>` +
    `<saml:AuthnContextClassRef>${o.loa ?? 'http://id.elegnamnden.se/loa/1.0/loa3'}</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>` +
    `<saml:AttributeStatement>${attributes}</saml:AttributeStatement></saml:Assertion>`
  );
}

/** Unsigned federation metadata (ID `_fed`, `<!--SIG-->` placeholder) naming one identity provider. */
export function federationMetadataXml(idp: {
  entityId: string;
  certificate: X509Certificate;
  ssoUrl: string;
}): string {
  return (
    '<md:EntitiesDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:mdattr="urn:oasis:names:tc:SAML:metadata:attribute" ' +
    'xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" xmlns:psc="http://id.swedenconnect.se/authn/1.0/principal-selection/ns" ID="_fed" Name="local">' +
    '<!--SIG-->' +
    `<md:EntityDescriptor entityID="${idp.entityId}"><md:Extensions><mdattr:EntityAttributes>` +
    '<saml:Attribute Name="urn:oasis:names:tc:SAML:attribute:assurance-certification"><saml:AttributeValue>http://id.elegnamnden.se/loa/1.0/loa3</saml:AttributeValue></saml:Attribute>' +
    '<saml:Attribute Name="http://macedir.org/entity-category"><saml:AttributeValue>http://id.elegnamnden.se/sprop/1.0/scal2</saml:AttributeValue></saml:Attribute>' +
    '</mdattr:EntityAttributes></md:Extensions>' +
    '<md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol" WantAuthnRequestsSigned="true">' +
    '<md:Extensions><psc:RequestedPrincipalSelection><psc:MatchValue Name="urn:oid:1.2.752.29.4.13"/></psc:RequestedPrincipalSelection></md:Extensions>' +
    `<md:KeyDescriptor use="signing"><ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:X509Data><ds:X509Certificate>${idp.certificate.raw.toString('base64')}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>` +
    `<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${idp.ssoUrl}"/>` +
    '</md:IDPSSODescriptor></md:EntityDescriptor></md:EntitiesDescriptor>'
  );
}

/** Federation metadata naming one identity provider (SSO at https://idp.example/sso), signed by `operator`. */
export function signedFederationMetadata(
  dir: string,
  entityId: string,
  idp: TestKey,
  operator: TestKey,
): string {
  const xml = federationMetadataXml({
    entityId,
    certificate: idp.certificate,
    ssoUrl: 'https://idp.example/sso',
  });
  return xmlsec1SignById(dir, xml, '_fed', 'EntitiesDescriptor', operator);
}

/** Federation metadata (ID `_fed`) holding these md:EntityDescriptor documents, signed by `operator`. */
export function signedFederationOf(
  dir: string,
  entityDescriptors: readonly string[],
  operator: TestKey,
): string {
  const entities = entityDescriptors.map((xml) => xml.replace(/^\s*<\?xml[^>]*\?>\s*/, ''));
  const xml =
    '<md:EntitiesDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" ID="_fed" Name="local">' +
    `<!--SIG-->${entities.join('')}</md:EntitiesDescriptor>`;
  return xmlsec1SignById(dir, xml, '_fed', 'EntitiesDescriptor', operator);
}
