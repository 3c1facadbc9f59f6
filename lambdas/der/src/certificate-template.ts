import { AsnConvert } from '@peculiar/asn1-schema';
import type { Name } from '@peculiar/asn1-x509';
import { algorithmIdentifier, algorithmIdentifierDer, schemeFor, signDer } from './algorithms';
import {
  authContextsDer,
  keyIdentifier,
  leafExtensions,
  nameDer,
  type CertificateSigner,
  type LeafExtensionOptions,
} from './certificate';
import { derChildren, derElement, signedDer } from './der';

/** What every leaf of one issuing CA shares: the issuer and where relying parties find its data. */
export type LeafTemplateOptions = Omit<LeafExtensionOptions, 'subjectPublicKeySpki' | 'authContexts'>;

/** What differs from one leaf to the next. */
export interface LeafVariables {
  /** The serial's magnitude (randomSerial()). */
  readonly serial: Buffer;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly subject: Name;
  /** `subject`'s DER when the caller has it already (nameDerOf); otherwise nameDer(subject). */
  readonly subjectDer?: Buffer;
  /** SubjectPublicKeyInfo, DER as the schema encodes it (e.g. a CSR's, re-serialized). */
  readonly subjectPublicKeySpki: Buffer;
  readonly authContexts: LeafExtensionOptions['authContexts'];
}

/** A SHA-1 key identifier's length: the SKI extension's DER is a fixed prefix and these octets. */
const KEY_ID_LENGTH = 20;

/**
 * The leaf certificate's TBSCertificate from a template: the fixed DER (version, signature algorithm,
 * issuer, and the extensions every leaf carries: key usage, EKU, basic constraints, AKI, policy, CRL
 * distribution point, AIA) is encoded once, with the `@peculiar` schemas (leafExtensions, the same
 * function the full encoding uses), and the variable fields (serial, validity, subject, public key, SKI,
 * Authentication Context) are encoded and spliced in per certificate. The result is byte for byte what
 * signCertificate encodes from leafExtensions (tests: certificate-template.test.ts).
 */
export class LeafCertificateTemplate {
  private readonly head: Buffer;
  private readonly issuer: Buffer;
  private readonly algorithm: Buffer;
  private readonly beforeSki: Buffer;
  private readonly skiPrefix: Buffer;
  private readonly afterSki: Buffer;
  private readonly authContextOid: Buffer;

  public constructor(
    options: LeafTemplateOptions,
    private readonly signer: Pick<CertificateSigner, 'name' | 'keyType'>,
  ) {
    this.algorithm = algorithmIdentifierDer(algorithmIdentifier(schemeFor(signer.keyType)));
    // version [0] EXPLICIT INTEGER v3 (2)
    this.head = Buffer.from([0xa0, 0x03, 0x02, 0x01, 0x02]);
    this.issuer = nameDer(signer.name);
    // Any key: only the SKI (fixed length) and the Authentication Context depend on it.
    const sample = leafExtensions({
      ...options,
      subjectPublicKeySpki: SAMPLE_SPKI,
      authContexts: [{ contextType: 'template' }],
    }).map((e) => Buffer.from(AsnConvert.serialize(e)));
    // keyUsage, extKeyUsage, basicConstraints | SKI | AKI, policies, CRL DP, AIA | AuthContext
    if (sample.length !== 9) throw new Error('the leaf extensions changed: update the template');
    this.beforeSki = Buffer.concat(sample.slice(0, 3));
    this.skiPrefix = sample[3].subarray(0, sample[3].length - KEY_ID_LENGTH);
    this.afterSki = Buffer.concat(sample.slice(4, 8));
    this.authContextOid = derChildren(sample[8])[0];
  }

  /** The TBSCertificate DER for these variables. */
  public tbsDer(v: LeafVariables): Buffer {
    const serial = derElement(
      0x02,
      v.serial[0] & 0x80 ? Buffer.concat([Buffer.from([0]), v.serial]) : v.serial,
    );
    const validity = derElement(0x30, Buffer.concat([timeDer(v.notBefore), timeDer(v.notAfter)]));
    const ski = Buffer.concat([this.skiPrefix, keyIdentifier(v.subjectPublicKeySpki)]);
    const extensions = derElement(
      0xa3,
      derElement(0x30, Buffer.concat([this.beforeSki, ski, this.afterSki, this.authContext(v.authContexts)])),
    );
    return derElement(
      0x30,
      Buffer.concat([
        this.head,
        serial,
        this.algorithm,
        this.issuer,
        validity,
        v.subjectDer ?? nameDer(v.subject),
        v.subjectPublicKeySpki,
        extensions,
      ]),
    );
  }

  /** The certificate DER: the spliced TBSCertificate signed by `sign` (in the HSM). */
  public async sign(v: LeafVariables, sign: CertificateSigner['sign']): Promise<Buffer> {
    const tbs = this.tbsDer(v);
    const signature = await signDer(tbs, schemeFor(this.signer.keyType), sign);
    return signedDer(tbs, this.algorithm, signature);
  }

  /** RFC 7773 AuthenticationContexts as the full encoding makes it (not critical: omitted). */
  private authContext(contexts: LeafVariables['authContexts']): Buffer {
    return derElement(
      0x30,
      Buffer.concat([this.authContextOid, derElement(0x04, authContextsDer(contexts))]),
    );
  }
}

/** RFC 5280 4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050; seconds, Z. */
function timeDer(date: Date): Buffer {
  const year = date.getUTCFullYear();
  const two = (n: number): string => String(n).padStart(2, '0');
  const rest = `${two(date.getUTCMonth() + 1)}${two(date.getUTCDate())}${two(date.getUTCHours())}${two(
    date.getUTCMinutes(),
  )}${two(date.getUTCSeconds())}Z`;
  return year >= 2050
    ? derElement(0x18, Buffer.from(`${String(year).padStart(4, '0')}${rest}`, 'ascii'))
    : derElement(0x17, Buffer.from(`${two(year % 100)}${rest}`, 'ascii'));
}

/** An EC P-256 SubjectPublicKeyInfo (the point is never used: only the SKI's length matters). */
const SAMPLE_SPKI = Buffer.from(
  '3059301306072a8648ce3d020106082a8648ce3d03010703420004' + '11'.repeat(64),
  'hex',
);
