import { createHash, randomBytes } from 'node:crypto';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import {
  AccessDescription,
  AuthorityInfoAccessSyntax,
  AuthorityKeyIdentifier,
  BasicConstraints,
  CRLDistributionPoints,
  Certificate,
  CertificatePolicies,
  DistributionPoint,
  DistributionPointName,
  ExtendedKeyUsage,
  Extension,
  Extensions,
  GeneralName,
  KeyIdentifier,
  KeyUsage,
  KeyUsageFlags,
  Name,
  PolicyInformation,
  SubjectKeyIdentifier,
  SubjectPublicKeyInfo,
  TBSCertificate,
  Validity,
  Version,
  id_ad_caIssuers,
  id_ad_ocsp,
  id_ce_authorityKeyIdentifier,
  id_ce_basicConstraints,
  id_ce_cRLDistributionPoints,
  id_ce_certificatePolicies,
  id_ce_extKeyUsage,
  id_ce_keyUsage,
  id_ce_subjectKeyIdentifier,
  id_pe_authorityInfoAccess,
} from '@peculiar/asn1-x509';
import { id_kp_OCSPSigning, id_pkix_ocsp_nocheck } from '@peculiar/asn1-ocsp';
import { AUTH_CONTEXT_OID } from '@pipeline/core/identity';
import type { KeyType } from '@pipeline/core/shared';
import { algorithmIdentifier, algorithmIdentifierDer, schemeFor, signDer } from './algorithms';
import { derElement, outerLength, signedDer, toArrayBuffer } from './der';
import type { SignDigest } from './types';

/** The key that signs a certificate: its name and key identifier go into the issued certificate. */
/** id-kp-documentSigning (RFC 9336): the one extended key usage of a one-time signing certificate. */
export const id_kp_documentSigning = '1.3.6.1.5.5.7.3.36';
/** id-kp-timeStamping (RFC 3161 2.3). */
export const id_kp_timeStamping = '1.3.6.1.5.5.7.3.8';

export interface CertificateSigner {
  readonly name: Name;
  readonly keyType: KeyType;
  /** The signer's subjectKeyIdentifier, which becomes the authorityKeyIdentifier. */
  readonly keyIdentifier: Buffer;
  readonly sign: SignDigest;
}

export interface CertificateContent {
  /** Positive serial number, big-endian, no leading zero octet. */
  readonly serial: Buffer;
  readonly subject: Name;
  readonly subjectPublicKeySpki: Buffer;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly extensions: readonly Extension[];
}

/** A parsed certificate: what the CA needs from its own certificates. */
export interface ParsedCertificate {
  readonly der: Buffer;
  readonly subject: Name;
  readonly subjectPublicKeySpki: Buffer;
  readonly keyIdentifier: Buffer;
  readonly notBefore: Date;
  readonly notAfter: Date;
}

/**
 * 128 random bits as a positive serial (RFC 5280 4.1.2.2 allows up to 20 octets). The first octet is
 * non-zero so the value always has 16 octets; the INTEGER encoder adds the sign octet when needed.
 */
export function randomSerial(): Buffer {
  for (;;) {
    const serial = randomBytes(16);
    if (serial[0] !== 0) return serial;
  }
}

/** RFC 5280 4.2.1.2 method 1: SHA-1 of the subjectPublicKey BIT STRING value. */
export function keyIdentifier(spki: Buffer): Buffer {
  const info = AsnConvert.parse(spki, SubjectPublicKeyInfo);
  return createHash('sha1').update(Buffer.from(info.subjectPublicKey)).digest();
}

/** DER INTEGER content of a positive number: a 0x00 sign octet when the top bit is set. */
function positiveInteger(value: Buffer): ArrayBuffer {
  return toArrayBuffer(value[0] & 0x80 ? Buffer.concat([Buffer.from([0]), value]) : value);
}

function extension(extnID: string, critical: boolean, value: unknown): Extension {
  return new Extension({ extnID, critical, extnValue: new OctetString(AsnConvert.serialize(value)) });
}

/** Where relying parties find the issuer's revocation data and certificate. */
export interface IssuerPointers {
  /** The issuer's CRL (CRL distribution point, RFC 5280 4.2.1.13). */
  readonly crlUrl: string;
  /** The issuer's certificate (AIA caIssuers, RFC 5280 4.2.2.1). */
  readonly caIssuersUrl: string;
  /** The OCSP responder for this certificate (AIA ocsp); absent where none answers for it. */
  readonly ocspUrl?: string;
}

/** One AuthenticationContext of RFC 7773: its type and its information (e.g. saci XML). */
interface AuthenticationContextInfo {
  readonly contextType: string;
  readonly contextInfo?: string;
}

export interface LeafExtensionOptions extends IssuerPointers {
  readonly subjectPublicKeySpki: Buffer;
  readonly issuerKeyIdentifier: Buffer;
  readonly policyOid: string;
  readonly ocspUrl: string;
  /** How the subject was authenticated: the Authentication Context extension's contexts (one or more). */
  readonly authContexts: readonly AuthenticationContextInfo[];
}

/**
 * RFC 7773 section 2: AuthenticationContexts ::= SEQUENCE SIZE (1..MAX) OF AuthenticationContext,
 * AuthenticationContext ::= SEQUENCE { contextType UTF8String, contextInfo UTF8String OPTIONAL }: the
 * extension's value (DER), for the full encoding here and the leaf template alike.
 */
export function authContextsDer(contexts: readonly AuthenticationContextInfo[]): Buffer {
  if (contexts.length === 0) throw new Error('an Authentication Context extension needs a context');
  const utf8 = (value: string): Buffer => derElement(0x0c, Buffer.from(value, 'utf8'));
  return derElement(
    0x30,
    Buffer.concat(
      contexts.map((c) =>
        derElement(
          0x30,
          Buffer.concat([utf8(c.contextType), ...(c.contextInfo === undefined ? [] : [utf8(c.contextInfo)])]),
        ),
      ),
    ),
  );
}

/** The AuthContext extension; not critical: a relying party that does not know it may ignore it. */
function authContextExtension(contexts: readonly AuthenticationContextInfo[]): Extension {
  return new Extension({
    extnID: AUTH_CONTEXT_OID,
    critical: false,
    extnValue: new OctetString(toArrayBuffer(authContextsDer(contexts))),
  });
}

/** The extensions that point relying parties at the issuer: CRL distribution point and AIA. */
function issuerPointerExtensions(pointers: IssuerPointers): Extension[] {
  const point = new DistributionPoint({
    distributionPoint: new DistributionPointName({
      fullName: [new GeneralName({ uniformResourceIdentifier: pointers.crlUrl })],
    }),
  });
  const access = (method: string, url: string): AccessDescription =>
    new AccessDescription({
      accessMethod: method,
      accessLocation: new GeneralName({ uniformResourceIdentifier: url }),
    });
  return [
    extension(id_ce_cRLDistributionPoints, false, new CRLDistributionPoints([point])),
    extension(
      id_pe_authorityInfoAccess,
      false,
      new AuthorityInfoAccessSyntax([
        ...(pointers.ocspUrl ? [access(id_ad_ocsp, pointers.ocspUrl)] : []),
        access(id_ad_caIssuers, pointers.caIssuersUrl),
      ]),
    ),
  ];
}

const keyIdentifiers = (spki: Buffer, issuerKeyIdentifier: Buffer): Extension[] => [
  extension(id_ce_subjectKeyIdentifier, false, new SubjectKeyIdentifier(keyIdentifier(spki))),
  extension(
    id_ce_authorityKeyIdentifier,
    false,
    new AuthorityKeyIdentifier({ keyIdentifier: new KeyIdentifier(issuerKeyIdentifier) }),
  ),
];

const policies = (policyOid: string): Extension =>
  extension(
    id_ce_certificatePolicies,
    false,
    new CertificatePolicies([new PolicyInformation({ policyIdentifier: policyOid })]),
  );

/**
 * End-entity signing certificate of a natural person (RFC 5280, ETSI EN 319 412-2): keyUsage
 * nonRepudiation (contentCommitment) only, critical (EN 319 412-2 4.3.2 key usage type A, for commitment
 * to signed content), extended key usage id-kp-documentSigning (RFC 9336), not a CA, key identifiers, the policy, the CRL distribution point and AIA (OCSP
 * responder, issuing CA certificate), and how the subject was authenticated (RFC 7773 AuthContext).
 */
export function leafExtensions(options: LeafExtensionOptions): Extension[] {
  return [
    extension(id_ce_keyUsage, true, new KeyUsage(KeyUsageFlags.nonRepudiation)),
    // Without an EKU a certificate is good for any purpose (RFC 5280 4.2.1.12): this one signs documents.
    extension(id_ce_extKeyUsage, false, new ExtendedKeyUsage([id_kp_documentSigning])),
    extension(id_ce_basicConstraints, true, new BasicConstraints({ cA: false })),
    ...keyIdentifiers(options.subjectPublicKeySpki, options.issuerKeyIdentifier),
    policies(options.policyOid),
    ...issuerPointerExtensions(options),
    authContextExtension(options.authContexts),
  ];
}

export interface CaExtensionOptions {
  readonly subjectPublicKeySpki: Buffer;
  /** Omitted for a self-signed root (its AKI would equal its SKI). */
  readonly issuerKeyIdentifier?: Buffer;
  /** 0 for an issuing CA that may only certify end entities; omitted for the root. */
  readonly pathLength?: number;
  /** A subordinate CA: the policies it issues under and where its issuer's CRL and certificate are. */
  readonly subordinate?: IssuerPointers & { readonly policyOid: string };
}

/**
 * CA certificate: basicConstraints CA (critical), keyCertSign + cRLSign (critical), key identifiers; a
 * subordinate CA also its certificate policy, CRL distribution point and AIA caIssuers (its issuer's).
 */
export function caExtensions(options: CaExtensionOptions): Extension[] {
  const extensions = [
    extension(
      id_ce_basicConstraints,
      true,
      new BasicConstraints({ cA: true, pathLenConstraint: options.pathLength }),
    ),
    extension(id_ce_keyUsage, true, new KeyUsage(KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign)),
  ];
  if (!options.issuerKeyIdentifier) {
    extensions.push(
      extension(
        id_ce_subjectKeyIdentifier,
        false,
        new SubjectKeyIdentifier(keyIdentifier(options.subjectPublicKeySpki)),
      ),
    );
    return extensions;
  }
  extensions.push(...keyIdentifiers(options.subjectPublicKeySpki, options.issuerKeyIdentifier));
  if (options.subordinate) {
    extensions.push(policies(options.subordinate.policyOid), ...issuerPointerExtensions(options.subordinate));
  }
  return extensions;
}

/**
 * A delegated OCSP responder (RFC 6960 4.2.2.2): keyUsage digitalSignature (critical), extended key usage
 * id-kp-OCSPSigning, id-pkix-ocsp-nocheck (its own status is not checked: it is short-lived instead),
 * key identifiers.
 */
export function ocspSignerExtensions(options: {
  readonly subjectPublicKeySpki: Buffer;
  readonly issuerKeyIdentifier: Buffer;
}): Extension[] {
  return [
    extension(id_ce_keyUsage, true, new KeyUsage(KeyUsageFlags.digitalSignature)),
    extension(id_ce_extKeyUsage, false, new ExtendedKeyUsage([id_kp_OCSPSigning])),
    new Extension({
      extnID: id_pkix_ocsp_nocheck,
      critical: false,
      extnValue: new OctetString(Buffer.from([5, 0])),
    }),
    ...keyIdentifiers(options.subjectPublicKeySpki, options.issuerKeyIdentifier),
  ];
}

/**
 * A time-stamping authority (RFC 3161 2.3): extended key usage id-kp-timeStamping only, critical;
 * keyUsage digitalSignature (critical); key identifiers; where its issuer's (the root's) CRL and
 * certificate are, so a validator can check its status.
 */
export function tsaExtensions(
  options: IssuerPointers & { readonly subjectPublicKeySpki: Buffer; readonly issuerKeyIdentifier: Buffer },
): Extension[] {
  return [
    extension(id_ce_keyUsage, true, new KeyUsage(KeyUsageFlags.digitalSignature)),
    extension(id_ce_extKeyUsage, true, new ExtendedKeyUsage([id_kp_timeStamping])),
    ...keyIdentifiers(options.subjectPublicKeySpki, options.issuerKeyIdentifier),
    ...issuerPointerExtensions(options),
  ];
}

/**
 * Builds the TBSCertificate, has `signer.sign` sign its digest (in the HSM) and returns the certificate
 * DER. One code path for every certificate the CA makes (root, issuing CA, leaves; RSA and EC).
 */
export async function signCertificate(
  content: CertificateContent,
  signer: CertificateSigner,
): Promise<Buffer> {
  const scheme = schemeFor(signer.keyType);
  const tbs = new TBSCertificate({
    version: Version.v3,
    serialNumber: positiveInteger(content.serial),
    signature: algorithmIdentifier(scheme),
    issuer: signer.name,
    validity: new Validity({ notBefore: content.notBefore, notAfter: content.notAfter }),
    subject: content.subject,
    subjectPublicKeyInfo: AsnConvert.parse(content.subjectPublicKeySpki, SubjectPublicKeyInfo),
    extensions: new Extensions([...content.extensions]),
  });
  const tbsDer = Buffer.from(AsnConvert.serialize(tbs));
  const signature = await signDer(tbsDer, scheme, signer.sign);
  return signedDer(tbsDer, algorithmIdentifierDer(algorithmIdentifier(scheme)), signature);
}

/** Parses a certificate DER; the key identifier is its SKI extension, else computed from its key. */
export function parseCertificate(der: Buffer): ParsedCertificate {
  if (outerLength(der) !== der.length) throw new Error('not a single DER certificate');
  const certificate = AsnConvert.parse(der, Certificate);
  const tbs = certificate.tbsCertificate;
  const subjectPublicKeySpki = Buffer.from(AsnConvert.serialize(tbs.subjectPublicKeyInfo));
  const ski = tbs.extensions?.find((e) => e.extnID === id_ce_subjectKeyIdentifier);
  return {
    der,
    subject: tbs.subject,
    subjectPublicKeySpki,
    keyIdentifier: ski
      ? Buffer.from(AsnConvert.parse(ski.extnValue.buffer, SubjectKeyIdentifier).buffer)
      : keyIdentifier(subjectPublicKeySpki),
    notBefore: tbs.validity.notBefore.getTime(),
    notAfter: tbs.validity.notAfter.getTime(),
  };
}

/** Serialized Name: subject/issuer comparisons and the subject hash of the issuance record. */
export function nameDer(name: Name): Buffer {
  return Buffer.from(AsnConvert.serialize(name));
}

/**
 * Where a certificate's status is published: the http(s) URLs of its CRL distribution points and of its
 * AIA OCSP responders (what a relying party fetches; another CA's certificate, such as an external TSA's).
 */
export function statusPointers(der: Buffer): { readonly crlUrls: string[]; readonly ocspUrls: string[] } {
  const extensions = AsnConvert.parse(der, Certificate).tbsCertificate.extensions ?? [];
  const http = (names: readonly GeneralName[] | undefined): string[] =>
    (names ?? [])
      .map((name) => name.uniformResourceIdentifier)
      .filter((url): url is string => url !== undefined && /^https?:\/\//i.test(url));
  const crl = extensions.find((e) => e.extnID === id_ce_cRLDistributionPoints);
  const aia = extensions.find((e) => e.extnID === id_pe_authorityInfoAccess);
  return {
    crlUrls: crl
      ? AsnConvert.parse(crl.extnValue.buffer, CRLDistributionPoints).flatMap((point) =>
          http(point.distributionPoint?.fullName),
        )
      : [],
    ocspUrls: aia
      ? http(
          AsnConvert.parse(aia.extnValue.buffer, AuthorityInfoAccessSyntax)
            .filter((access) => access.accessMethod === id_ad_ocsp)
            .map((access) => access.accessLocation),
        )
      : [],
  };
}
