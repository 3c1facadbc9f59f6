/**
 * Test support: a real, small in-process certificate issuer for the signing core's integration tests
 * until the CA (lambdas/ca) is wired in. It does what the CA must: reads the request record, demands
 * `signing` with no certificate yet, verifies the CSR's proof of possession, takes the subject from the
 * record (never from the CSR), and issues a real X.509 certificate from an EC P-256 test root.
 * Tests only: its CA key lives in process memory.
 */
import { generateKeyPairSync, randomBytes, sign as nodeSign, type KeyObject } from 'node:crypto';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import {
  AlgorithmIdentifier,
  BasicConstraints,
  Certificate,
  Extension,
  Extensions,
  KeyUsage,
  KeyUsageFlags,
  SubjectPublicKeyInfo,
  TBSCertificate,
  Validity,
  id_ce_basicConstraints,
  id_ce_keyUsage,
} from '@peculiar/asn1-x509';
import type {
  CertificateIssuer,
  IssueCertificateInput,
  IssuedCertificate,
  SignRequestRecord,
} from '../core/src';
import { subjectAttributes } from '../core/src';
import { encodeName, pem, verifyCsr } from '../pki/src';

const ECDSA_WITH_SHA256 = '1.2.840.10045.4.3.2';

export class TestIssuerError extends Error {
  public override name = 'TestIssuerError';
  public constructor(
    message: string,
    public readonly code: string,
  ) {
    super(message);
  }
}

export class TestCertificateIssuer implements CertificateIssuer {
  public readonly rootPem: string;
  private readonly caKey: KeyObject;
  private readonly caName = encodeName([{ oid: '2.5.4.3', kind: 'utf8String', value: 'Test Signing Root' }]);
  /** Request ids a certificate was issued for: one certificate per request, as the CA promises. */
  public readonly issued = new Map<string, string>();

  public constructor(private readonly requests: { get(id: string): Promise<SignRequestRecord | undefined> }) {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.caKey = privateKey;
    const spki = publicKey.export({ type: 'spki', format: 'der' });
    this.rootPem = this.certificate(this.caName, spki, true).pem;
  }

  public async issue(input: IssueCertificateInput): Promise<IssuedCertificate> {
    const record = await this.requests.get(input.requestId);
    if (!record) throw new TestIssuerError('unknown request', 'REQUEST_NOT_FOUND');
    if (record.status !== 'signing' || record.certificate) {
      throw new TestIssuerError('request is not awaiting a certificate', 'REQUEST_NOT_SIGNING');
    }
    if (this.issued.has(input.requestId)) {
      throw new TestIssuerError('a certificate was already issued for this request', 'ALREADY_ISSUED');
    }
    const csr = verifyCsr(input.csrDer);
    if (csr.keyType !== record.keyType) throw new TestIssuerError('key type mismatch', 'KEY_TYPE_MISMATCH');
    const leaf = this.certificate(encodeName(subjectAttributes(record.signer)), csr.publicKeySpki, false);
    this.issued.set(input.requestId, leaf.pem);
    return { certificatePem: leaf.pem, chainPem: [this.rootPem], serialHex: leaf.serialHex };
  }

  private certificate(
    subject: ReturnType<typeof encodeName>,
    spki: Buffer,
    ca: boolean,
  ): { pem: string; serialHex: string } {
    const now = Date.now();
    const serial = randomBytes(16);
    // Positive and minimal in DER: top bit clear, first byte never zero.
    serial[0] = (serial[0] & 0x7f) | 0x40;
    const algorithm = new AlgorithmIdentifier({ algorithm: ECDSA_WITH_SHA256 });
    const extensions = new Extensions([
      new Extension({
        extnID: id_ce_basicConstraints,
        critical: true,
        extnValue: new OctetString(AsnConvert.serialize(new BasicConstraints({ cA: ca }))),
      }),
      new Extension({
        extnID: id_ce_keyUsage,
        critical: true,
        extnValue: new OctetString(
          AsnConvert.serialize(
            new KeyUsage(
              ca ? KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign : KeyUsageFlags.nonRepudiation,
            ),
          ),
        ),
      }),
    ]);
    const tbs = new TBSCertificate({
      version: 2,
      serialNumber: new Uint8Array(serial).buffer,
      signature: algorithm,
      issuer: this.caName,
      validity: new Validity({ notBefore: new Date(now - 60_000), notAfter: new Date(now + 86_400_000) }),
      subject,
      subjectPublicKeyInfo: AsnConvert.parse(spki, SubjectPublicKeyInfo),
      extensions,
    });
    const tbsDer = Buffer.from(AsnConvert.serialize(tbs));
    const signature = nodeSign('sha256', tbsDer, { key: this.caKey, dsaEncoding: 'der' });
    const cert = new Certificate({
      tbsCertificate: tbs,
      signatureAlgorithm: algorithm,
      signatureValue: new Uint8Array(signature).buffer,
    });
    return {
      pem: pem('CERTIFICATE', Buffer.from(AsnConvert.serialize(cert))),
      serialHex: serial.toString('hex'),
    };
  }
}
