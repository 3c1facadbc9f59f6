/**
 * The leaf certificate template against the full schema encoding: for many random leaves (serials with
 * and without the sign octet, validities on both sides of 2050, subjects and Authentication Contexts of
 * every length class, EC and RSA keys) the spliced certificate is byte for byte the one signCertificate
 * encodes from leafExtensions, and OpenSSL reads it.
 */
import { createHash, generateKeyPairSync, randomBytes, randomInt } from 'node:crypto';
import { X509Certificate } from 'node:crypto';
import { LeafCertificateTemplate, type LeafVariables } from '../src/certificate-template';
import { leafExtensions, signCertificate, type CertificateSigner } from '../src/certificate';
import { encodeName, nameDerOf } from '../src/name';

const spkiOf = (keys: { publicKey: { export(o: { type: 'spki'; format: 'der' }): Buffer } }): Buffer =>
  keys.publicKey.export({ type: 'spki', format: 'der' });
const KEYS = [
  spkiOf(generateKeyPairSync('ec', { namedCurve: 'P-256' })),
  spkiOf(generateKeyPairSync('ec', { namedCurve: 'P-384' })),
  spkiOf(generateKeyPairSync('rsa', { modulusLength: 2048 })),
];

/** A deterministic "HSM": the signature is a hash of the digest, so equal TBS give equal certificates. */
const signer = (keyType: CertificateSigner['keyType']): CertificateSigner => ({
  name: encodeName([
    { oid: '2.5.4.6', kind: 'printableString', value: 'SE' },
    { oid: '2.5.4.3', kind: 'utf8String', value: 'Issuing CA' },
  ]),
  keyType,
  keyIdentifier: randomBytes(20),
  sign: async (digest) => Promise.resolve(createHash('sha256').update(digest).digest()),
});

const text = (length: number): string =>
  Array.from({ length }, () =>
    String.fromCodePoint(randomInt(2) ? randomInt(0x20, 0x7f) : randomInt(0xa0, 0x3000)),
  ).join('');
/** Lengths around the DER length-octet boundaries. */
const length = (): number => [0, 1, 40, 127, 128, 200, 255, 256, 1000, 70_000][randomInt(10)];
const date = (): Date =>
  new Date(Date.UTC(1990, 0, 1) + (randomInt(0, 2 ** 47) % (Date.UTC(2120, 0, 1) - Date.UTC(1990, 0, 1))));

function randomLeaf(): LeafVariables {
  const serial = randomBytes(randomInt(1, 21));
  if (serial[0] === 0) serial[0] = 1;
  const attributes = Array.from({ length: randomInt(1, 6) }, () => ({
    oid: ['2.5.4.3', '2.5.4.5', '2.5.4.42', '2.5.4.4'][randomInt(4)],
    kind: 'utf8String' as const,
    value: text(Math.max(1, Math.min(length(), 300))),
  }));
  return {
    serial,
    notBefore: date(),
    notAfter: date(),
    subject: encodeName(attributes),
    // As the CA passes it (spliced), or left to the template to encode.
    ...(randomInt(2) ? { subjectDer: nameDerOf(attributes) } : {}),
    subjectPublicKeySpki: KEYS[randomInt(KEYS.length)],
    authContexts: Array.from({ length: randomInt(1, 3) }, () => ({
      contextType: text(Math.min(length(), 300)),
      ...(randomInt(3) ? { contextInfo: text(length()) } : {}),
    })),
  };
}

const pointers = {
  issuerKeyIdentifier: randomBytes(20),
  policyOid: '1.2.752.201.3.1',
  crlUrl: 'http://pki.example/issuing.crl',
  caIssuersUrl: 'http://pki.example/issuing.cer',
  ocspUrl: 'http://pki.example/ocsp',
};

test.each(['EC-P256', 'RSA-2048'] as const)(
  '%s issuer: for 300 random leaves the spliced certificate is byte-identical to the schema encoding',
  async (keyType) => {
    const issuer = signer(keyType);
    const template = new LeafCertificateTemplate(pointers, issuer);
    for (let i = 0; i < 300; i++) {
      const leaf = randomLeaf();
      const full = await signCertificate(
        {
          serial: leaf.serial,
          subject: leaf.subject,
          subjectPublicKeySpki: leaf.subjectPublicKeySpki,
          notBefore: leaf.notBefore,
          notAfter: leaf.notAfter,
          extensions: leafExtensions({
            ...pointers,
            subjectPublicKeySpki: leaf.subjectPublicKeySpki,
            authContexts: leaf.authContexts,
          }),
        },
        issuer,
      );
      const spliced = await template.sign(leaf, issuer.sign);
      expect(spliced.toString('hex')).toBe(full.toString('hex'));
    }
  },
);

test('a spliced leaf is a certificate OpenSSL (node:crypto X509Certificate) reads, with its serial, validity, key and identifiers', async () => {
  const issuer = signer('EC-P256');
  const template = new LeafCertificateTemplate(pointers, issuer);
  const leaf = {
    ...randomLeaf(),
    serial: Buffer.from('80'.repeat(16), 'hex'),
    notBefore: new Date('2049-12-31T23:59:59Z'),
    notAfter: new Date('2050-01-01T00:00:00Z'),
  };
  const cert = new X509Certificate(await template.sign(leaf, issuer.sign));
  expect(cert.serialNumber.toLowerCase()).toBe('80'.repeat(16));
  expect(new Date(cert.validFrom).toISOString()).toBe('2049-12-31T23:59:59.000Z');
  expect(new Date(cert.validTo).toISOString()).toBe('2050-01-01T00:00:00.000Z');
  expect(cert.publicKey.export({ type: 'spki', format: 'der' }).equals(leaf.subjectPublicKeySpki)).toBe(true);
  expect(cert.toLegacyObject().ext_key_usage).toEqual(['1.3.6.1.5.5.7.3.36']);
});
