/**
 * ESS signing-certificate-v2 (RFC 5035), the signed attribute that binds a CMS signature to the one
 * certificate of its signer (the AdES baseline's signing-certificate reference), as @peculiar ASN.1
 * schema classes:
 *
 *   SigningCertificateV2 ::= SEQUENCE { certs SEQUENCE OF ESSCertIDv2, policies ... OPTIONAL }
 *   ESSCertIDv2 ::= SEQUENCE { hashAlgorithm AlgorithmIdentifier DEFAULT {algorithm id-sha256},
 *                              certHash OCTET STRING, issuerSerial IssuerSerial OPTIONAL }
 *   IssuerSerial ::= SEQUENCE { issuer GeneralNames, serialNumber CertificateSerialNumber }
 */
import {
  AsnIntegerArrayBufferConverter,
  AsnProp,
  AsnPropTypes,
  AsnType,
  AsnTypeTypes,
  OctetString,
} from '@peculiar/asn1-schema';
import { AlgorithmIdentifier, GeneralName } from '@peculiar/asn1-x509';

export const id_aa_signingCertificateV2 = '1.2.840.113549.1.9.16.2.47';

export class IssuerSerial {
  @AsnProp({ type: GeneralName, repeated: 'sequence' })
  public issuer: GeneralName[] = [];

  @AsnProp({ type: AsnPropTypes.Integer, converter: AsnIntegerArrayBufferConverter })
  public serialNumber = new ArrayBuffer(0);

  public constructor(params: Partial<IssuerSerial> = {}) {
    Object.assign(this, params);
  }
}

export class EssCertIdV2 {
  /** Omitted for SHA-256, the DEFAULT (DER leaves out a default value). */
  @AsnProp({ type: AlgorithmIdentifier, optional: true })
  public hashAlgorithm?: AlgorithmIdentifier;

  @AsnProp({ type: OctetString })
  public certHash = new OctetString();

  @AsnProp({ type: IssuerSerial, optional: true })
  public issuerSerial?: IssuerSerial;

  public constructor(params: Partial<EssCertIdV2> = {}) {
    Object.assign(this, params);
  }
}

@AsnType({ type: AsnTypeTypes.Sequence })
export class SigningCertificateV2 {
  @AsnProp({ type: EssCertIdV2, repeated: 'sequence' })
  public certs: EssCertIdV2[] = [];

  public constructor(params: Partial<SigningCertificateV2> = {}) {
    Object.assign(this, params);
  }
}
