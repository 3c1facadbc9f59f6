/**
 * CMS SignedData (RFC 5652) for AdES baseline B-B signatures made with a one-time key: the service builds
 * the signed attributes once the signer's certificate exists, the HSM signs their digest, and the result is
 * a detached SignedData carrying the leaf and issuing CA certificates. Built with the @peculiar ASN.1
 * schemas; the signer-info structure leaves room for unsigned attributes (an RFC 3161 signature
 * time-stamp for B-T).
 */
import { createHash } from 'node:crypto';
import {
  Attribute,
  CertificateChoices,
  CertificateSet,
  ContentInfo,
  EncapsulatedContentInfo,
  IssuerAndSerialNumber,
  SignedData,
  SignerIdentifier,
  SignerInfo,
  SignerInfos,
  DigestAlgorithmIdentifiers,
  id_contentType,
  id_data,
  id_messageDigest,
  id_signedData,
  id_ri_ocsp_response,
  id_signingTime,
} from '@peculiar/asn1-cms';
import { AsnConvert, AsnObjectIdentifierConverter, OctetString } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier, Certificate, GeneralName, Time } from '@peculiar/asn1-x509';
import * as ecc from '@peculiar/asn1-ecc';
import * as rsa from '@peculiar/asn1-rsa';
import {
  DIGEST_LENGTH,
  nodeHashName,
  type AdesProfile,
  type DigestAlgorithm,
  type SignatureAlgorithm,
} from '@pipeline/core/shared';
import type { ContainerBuilder, ValidationData } from '@pipeline/core/signing';
import { derChildren, derElement, pemToDer, toArrayBuffer } from './der';
import { EssCertIdV2, IssuerSerial, SigningCertificateV2, id_aa_signingCertificateV2 } from './ess';

/** id-aa-signatureTimeStampToken (RFC 3161 appendix A): the unsigned attribute of AdES B-T. */
export const id_aa_signatureTimeStampToken = '1.2.840.113549.1.9.16.2.14';

const DIGEST_OIDS: Readonly<Record<DigestAlgorithm, string>> = {
  'SHA-256': '2.16.840.1.101.3.4.2.1',
  'SHA-384': '2.16.840.1.101.3.4.2.2',
  'SHA-512': '2.16.840.1.101.3.4.2.3',
};

const RSA_PKCS1_OIDS: Readonly<Record<DigestAlgorithm, string>> = {
  'SHA-256': rsa.id_sha256WithRSAEncryption,
  'SHA-384': rsa.id_sha384WithRSAEncryption,
  'SHA-512': rsa.id_sha512WithRSAEncryption,
};

const ECDSA_OIDS: Readonly<Record<DigestAlgorithm, string>> = {
  'SHA-256': ecc.id_ecdsaWithSHA256,
  'SHA-384': ecc.id_ecdsaWithSHA384,
  'SHA-512': ecc.id_ecdsaWithSHA512,
};

/** The SHA-2 algorithm an AlgorithmIdentifier OID names; undefined for any other (SHA-1 among them). */
export function digestAlgorithmOfOid(oid: string): DigestAlgorithm | undefined {
  return (Object.keys(DIGEST_OIDS) as DigestAlgorithm[]).find((a) => DIGEST_OIDS[a] === oid);
}

/** SHA-2 AlgorithmIdentifier with absent parameters (RFC 5754 3: "SHOULD omit"). */
export function digestAlgorithmIdentifier(algorithm: DigestAlgorithm): AlgorithmIdentifier {
  return new AlgorithmIdentifier({ algorithm: DIGEST_OIDS[algorithm] });
}

/**
 * The SignerInfo signatureAlgorithm for a scheme: sha*WithRSAEncryption (NULL parameters, RFC 4055),
 * id-RSASSA-PSS with its parameters (hash, MGF1 with the same hash, salt length = hash length, RFC 4055),
 * ecdsa-with-SHA* (no parameters, RFC 5758).
 */
export function signatureAlgorithmIdentifier(
  scheme: SignatureAlgorithm,
  digestAlgorithm: DigestAlgorithm,
): AlgorithmIdentifier {
  switch (scheme) {
    case 'RSASSA-PKCS1-v1_5':
      return new AlgorithmIdentifier({ algorithm: RSA_PKCS1_OIDS[digestAlgorithm], parameters: null });
    case 'ECDSA':
      return new AlgorithmIdentifier({ algorithm: ECDSA_OIDS[digestAlgorithm] });
    case 'RSASSA-PSS': {
      const hash = digestAlgorithmIdentifier(digestAlgorithm);
      const params = new rsa.RsaSaPssParams({
        hashAlgorithm: hash,
        maskGenAlgorithm: new AlgorithmIdentifier({
          algorithm: rsa.id_mgf1,
          parameters: AsnConvert.serialize(hash),
        }),
        saltLength: DIGEST_LENGTH[digestAlgorithm],
      });
      return new AlgorithmIdentifier({
        algorithm: rsa.id_RSASSA_PSS,
        parameters: AsnConvert.serialize(params),
      });
    }
  }
}

export interface SignedAttributesInput {
  readonly profile: AdesProfile;
  /** Digest of the signed content (the document, or a PDF's byte ranges), with its algorithm. */
  readonly digestAlgorithm: DigestAlgorithm;
  readonly messageDigest: Buffer;
  /** The signer's certificate (DER): its hash and issuer/serial go into signing-certificate-v2. */
  readonly certificateDer: Buffer;
  /** CAdES only: PAdES forbids the signingTime attribute (the time is the PDF dictionary's /M). */
  readonly signingTime: Date;
}

function attribute(type: string, value: unknown): Attribute {
  return new Attribute({ attrType: type, attrValues: [AsnConvert.serialize(value)] });
}

/** The contentType signed attribute (an OID value, encoded as such, not as a schema object). */
export function contentTypeAttribute(contentType: string): Attribute {
  return new Attribute({
    attrType: id_contentType,
    attrValues: [AsnObjectIdentifierConverter.toASN(contentType).toBER()],
  });
}

export function messageDigestAttribute(digest: Buffer): Attribute {
  return attribute(id_messageDigest, new OctetString(digest));
}

/** ESS signingCertificateV2 naming one certificate: its SHA-256, its issuer and serial (RFC 5035, 5816). */
export function signingCertificateV2Attribute(certificateDer: Buffer): Attribute {
  const certificate = AsnConvert.parse(certificateDer, Certificate);
  const essCertId = new EssCertIdV2({
    certHash: new OctetString(createHash('sha256').update(certificateDer).digest()),
    issuerSerial: new IssuerSerial({
      issuer: [new GeneralName({ directoryName: certificate.tbsCertificate.issuer })],
      serialNumber: certificate.tbsCertificate.serialNumber,
    }),
  });
  return attribute(id_aa_signingCertificateV2, new SigningCertificateV2({ certs: [essCertId] }));
}

/** Attributes in DER order (a SET OF is sorted by its elements' encodings), as a verifier re-encodes them. */
export function derOrdered(attributes: readonly Attribute[]): Attribute[] {
  return attributes
    .map((a) => ({ a, der: Buffer.from(AsnConvert.serialize(a)) }))
    .sort((x, y) => Buffer.compare(x.der, y.der))
    .map((x) => x.a);
}

/**
 * The signed attributes, in DER order (a SET OF is sorted by the encodings of its elements), so the bytes
 * signed are exactly the bytes a verifier re-encodes: contentType id-data, messageDigest,
 * signingCertificateV2 (SHA-256 of the certificate, its issuer and serial) and, for CAdES, signingTime.
 */
export function signedAttributes(input: SignedAttributesInput): Attribute[] {
  if (input.messageDigest.length !== DIGEST_LENGTH[input.digestAlgorithm]) {
    throw new RangeError(`messageDigest must be ${DIGEST_LENGTH[input.digestAlgorithm]} bytes`);
  }
  const attributes = [
    contentTypeAttribute(id_data),
    messageDigestAttribute(input.messageDigest),
    signingCertificateV2Attribute(input.certificateDer),
  ];
  if (input.profile === 'CAdES-B-B') {
    attributes.push(attribute(id_signingTime, new Time(input.signingTime)));
  }
  return derOrdered(attributes);
}

/** The DER the signature covers: the attributes as a SET OF (tag 0x31), RFC 5652 5.4. */
export function signedAttributesDer(attributes: readonly Attribute[]): Buffer {
  const content = Buffer.concat(attributes.map((a) => Buffer.from(AsnConvert.serialize(a))));
  return Buffer.concat([Buffer.from([0x31]), derLength(content.length), content]);
}

/** The digest the HSM signs: of the signed attributes' DER, with the request's digest algorithm. */
export function signedAttributesDigest(attributes: readonly Attribute[], algorithm: DigestAlgorithm): Buffer {
  return createHash(nodeHashName(algorithm)).update(signedAttributesDer(attributes)).digest();
}

export interface SignedDataInput {
  readonly attributes: readonly Attribute[];
  readonly signature: Buffer;
  readonly digestAlgorithm: DigestAlgorithm;
  readonly signatureAlgorithm: SignatureAlgorithm;
  /** Leaf first, then the issuing CA (the trust anchor stays with the relying party). */
  readonly certificatesDer: readonly Buffer[];
  /** Unsigned attributes (e.g. a signature time-stamp token); none for B-B. */
  readonly unsignedAttributes?: readonly Attribute[];
  /** B-LT: further certificates (root, TSA, OCSP responder) and revocation data for the SignedData. */
  readonly validationData?: ValidationData;
}

/** ContentInfo { signedData } DER, detached (no eContent): the `.p7s` a relying party verifies. */
export function buildSignedData(input: SignedDataInput): Buffer {
  const [leafDer] = input.certificatesDer;
  const leaf = AsnConvert.parse(leafDer, Certificate);
  const digestAlgorithm = digestAlgorithmIdentifier(input.digestAlgorithm);
  const signerInfo = new SignerInfo({
    version: 1,
    sid: new SignerIdentifier({
      issuerAndSerialNumber: new IssuerAndSerialNumber({
        issuer: leaf.tbsCertificate.issuer,
        serialNumber: leaf.tbsCertificate.serialNumber,
      }),
    }),
    digestAlgorithm,
    signedAttrs: [...input.attributes],
    signatureAlgorithm: signatureAlgorithmIdentifier(input.signatureAlgorithm, input.digestAlgorithm),
    signature: new OctetString(input.signature),
    ...(input.unsignedAttributes?.length ? { unsignedAttrs: [...input.unsignedAttributes] } : {}),
  });
  const signedData = new SignedData({
    version: 1,
    digestAlgorithms: new DigestAlgorithmIdentifiers([digestAlgorithm]),
    encapContentInfo: new EncapsulatedContentInfo({ eContentType: id_data }),
    certificates: new CertificateSet(
      uniqueDer([...input.certificatesDer, ...(input.validationData?.certificates ?? [])]).map(
        (der) => new CertificateChoices({ certificate: AsnConvert.parse(der, Certificate) }),
      ),
    ),
    signerInfos: new SignerInfos([signerInfo]),
  });
  const contentInfo = new ContentInfo({
    contentType: id_signedData,
    content: toArrayBuffer(
      withRevocationInfo(Buffer.from(AsnConvert.serialize(signedData)), input.validationData),
    ),
  });
  return Buffer.from(AsnConvert.serialize(contentInfo));
}

/**
 * SignedData.crls ([1] RevocationInfoChoices): each CRL as a CertificateList, each OCSP response as
 * other-revocation-info id-ri-ocsp-response (RFC 5940), where CAdES B-LT keeps them. Spliced in before the
 * signerInfos, because the schema class knows only the `other` choice.
 */
function withRevocationInfo(signedDataDer: Buffer, data: ValidationData | undefined): Buffer {
  if (!data || data.crls.length + data.ocspResponses.length === 0) return signedDataDer;
  const ocsp = data.ocspResponses.map((der) =>
    derElement(
      0xa1,
      Buffer.concat([Buffer.from(AsnObjectIdentifierConverter.toASN(id_ri_ocsp_response).toBER()), der]),
    ),
  );
  const crls = derElement(0xa1, Buffer.concat([...uniqueDer(data.crls), ...ocsp]));
  const fields = derChildren(signedDataDer);
  const signerInfos = fields.pop()!;
  return derElement(0x30, Buffer.concat([...fields, crls, signerInfos]));
}

/**
 * The signature values of a CMS ContentInfo's SignerInfos, in order. SignedData is split by hand, because
 * the schema's RevocationInfoChoice knows only the `other` choice and refuses a CRL in `crls` (a B-LT
 * container carries the root's CRL there): signerInfos is SignedData's last field whatever precedes it.
 */
export function signerSignatures(cmsDer: Buffer): Buffer[] {
  const info = AsnConvert.parse(cmsDer, ContentInfo);
  if (info.contentType !== id_signedData) throw new Error('not a CMS SignedData');
  const signerInfos = derChildren(Buffer.from(info.content)).pop();
  if (!signerInfos) throw new Error('a SignedData without signerInfos');
  return AsnConvert.parse(signerInfos, SignerInfos).map((s) => Buffer.from(s.signature.buffer));
}

function uniqueDer(list: readonly Buffer[]): Buffer[] {
  const seen = new Set<string>();
  return list.filter((der) => {
    const key = der.toString('base64');
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The signature-time-stamp unsigned attribute (B-T): the TSA's token over the signature value. */
export function signatureTimeStampAttribute(tokenDer: Buffer): Attribute {
  return new Attribute({ attrType: id_aa_signatureTimeStampToken, attrValues: [toArrayBuffer(tokenDer)] });
}

function derLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) bytes.unshift(n % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

/** The signing core's ContainerBuilder: CMS SignedData for the request's AdES profile. */
export const prepareCmsContainer: ContainerBuilder = (input) => {
  const certificateDer = pemToDer(input.certificatePem);
  const attributes = signedAttributes({
    profile: input.profile,
    digestAlgorithm: input.digestAlgorithm,
    messageDigest: input.messageDigest,
    certificateDer,
    signingTime: input.signingTime,
  });
  return {
    toBeSigned: signedAttributesDigest(attributes, input.digestAlgorithm),
    finish: (signature, extras) =>
      buildSignedData({
        attributes,
        signature,
        digestAlgorithm: input.digestAlgorithm,
        signatureAlgorithm: input.signatureAlgorithm,
        certificatesDer: [certificateDer, ...input.chainPem.slice(0, 1).map((pem) => pemToDer(pem))],
        ...(extras?.timeStampToken
          ? { unsignedAttributes: [signatureTimeStampAttribute(extras.timeStampToken)] }
          : {}),
        ...(extras?.validationData ? { validationData: extras.validationData } : {}),
      }),
  };
};
