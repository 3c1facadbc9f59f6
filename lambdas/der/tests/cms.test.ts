/**
 * CAdES-B-B / PAdES-B-B SignedData from the CMS builder, for every key type and scheme the service
 * offers, judged by `openssl cms -verify` against a CA made with the openssl command line (the keys here
 * are software keys: the HSM path is covered by the signing core's integration tests).
 */
import { execFileSync } from 'node:child_process';
import { constants, createHash, createPrivateKey, randomBytes, sign, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  nodeHashName,
  type AdesProfile,
  type DigestAlgorithm,
  type SignatureAlgorithm,
} from '@pipeline/core/shared';
import {
  opensslCmsVerify,
  opensslSigningCertificateV2Hash,
  runOpenssl,
} from '../../../scripts/local/verify/openssl';
import {
  buildSignedData,
  ocspErrorResponse,
  pemToDer,
  signedAttributes,
  signedAttributesDer,
  signerSignatures,
} from '../src';

let dir: string;
const openssl = (...args: string[]): string =>
  execFileSync('openssl', args, { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

interface Leaf {
  readonly key: KeyObject;
  readonly pem: string;
  readonly der: Buffer;
}
let rootPem: string;
let issuingPem: string;
const leaves = new Map<string, Leaf>();

/** A leaf for a key spec (`rsa:2048`, `ec:P-256`) issued by the openssl issuing CA. */
function issueLeaf(name: string, keySpec: string): Leaf {
  const [kind, size] = keySpec.split(':');
  const keyArgs =
    kind === 'rsa' ? ['-newkey', `rsa:${size}`] : ['-newkey', 'ec', '-pkeyopt', `ec_paramgen_curve:${size}`];
  openssl(
    'req',
    '-new',
    ...keyArgs,
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
    '-subj',
    `/C=SE/CN=${name}`,
  );
  openssl(
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    'issuing.pem',
    '-CAkey',
    'issuing.key',
    '-set_serial',
    `0x${randomBytes(8).toString('hex')}`,
    '-days',
    '2',
    '-out',
    `${name}.pem`,
    '-extfile',
    'leaf.ext',
  );
  const pem = readFileSync(join(dir, `${name}.pem`), 'utf8');
  return { key: createPrivateKey(readFileSync(join(dir, `${name}.key`))), pem, der: pemToDer(pem) };
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cms-'));
  const write = (file: string, text: string): void =>
    void execFileSync('tee', [join(dir, file)], { input: text, stdio: ['pipe', 'ignore', 'ignore'] });
  write(
    'ca.ext',
    'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\nsubjectKeyIdentifier=hash\n',
  );
  write(
    'leaf.ext',
    'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,nonRepudiation\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n',
  );
  openssl(
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-384',
    '-nodes',
    '-keyout',
    'root.key',
    '-out',
    'root.pem',
    '-subj',
    '/CN=Test Root',
    '-days',
    '3',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  openssl(
    'req',
    '-new',
    '-newkey',
    'rsa:3072',
    '-nodes',
    '-keyout',
    'issuing.key',
    '-out',
    'issuing.csr',
    '-subj',
    '/CN=Test Issuing CA',
  );
  openssl(
    'x509',
    '-req',
    '-in',
    'issuing.csr',
    '-CA',
    'root.pem',
    '-CAkey',
    'root.key',
    '-set_serial',
    '2',
    '-days',
    '3',
    '-out',
    'issuing.pem',
    '-extfile',
    'ca.ext',
  );
  rootPem = readFileSync(join(dir, 'root.pem'), 'utf8');
  issuingPem = readFileSync(join(dir, 'issuing.pem'), 'utf8');
  for (const spec of ['rsa:2048', 'rsa:3072', 'rsa:4096', 'ec:P-256', 'ec:P-384'])
    leaves.set(spec, issueLeaf(spec.replace(':', '-'), spec));
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Signs like the HSM does: over the signed attributes' digest, with the scheme's padding. */
function cmsFor(options: {
  leaf: Leaf;
  document: Buffer;
  digestAlgorithm: DigestAlgorithm;
  scheme: SignatureAlgorithm;
  profile: AdesProfile;
  certificatesDer?: Buffer[];
  validationData?: Parameters<typeof buildSignedData>[0]['validationData'];
  signingTime?: Date;
}): Buffer {
  const hash = nodeHashName(options.digestAlgorithm);
  const attributes = signedAttributes({
    profile: options.profile,
    digestAlgorithm: options.digestAlgorithm,
    messageDigest: createHash(hash).update(options.document).digest(),
    certificateDer: options.leaf.der,
    signingTime: options.signingTime ?? new Date(),
  });
  const key =
    options.scheme === 'RSASSA-PSS'
      ? {
          key: options.leaf.key,
          padding: constants.RSA_PKCS1_PSS_PADDING,
          saltLength: constants.RSA_PSS_SALTLEN_DIGEST,
        }
      : options.leaf.key;
  const signature = sign(hash, signedAttributesDer(attributes), key);
  return buildSignedData({
    attributes,
    signature,
    digestAlgorithm: options.digestAlgorithm,
    signatureAlgorithm: options.scheme,
    certificatesDer: options.certificatesDer ?? [options.leaf.der, pemToDer(issuingPem)],
    ...(options.validationData ? { validationData: options.validationData } : {}),
  });
}

const CASES: Array<[string, SignatureAlgorithm, DigestAlgorithm]> = [
  ['rsa:2048', 'RSASSA-PKCS1-v1_5', 'SHA-256'],
  ['rsa:2048', 'RSASSA-PSS', 'SHA-256'],
  ['rsa:3072', 'RSASSA-PSS', 'SHA-384'],
  ['rsa:3072', 'RSASSA-PKCS1-v1_5', 'SHA-384'],
  ['rsa:4096', 'RSASSA-PKCS1-v1_5', 'SHA-512'],
  ['rsa:4096', 'RSASSA-PSS', 'SHA-512'],
  ['ec:P-256', 'ECDSA', 'SHA-256'],
  ['ec:P-384', 'ECDSA', 'SHA-384'],
];

test.each(CASES)(
  '%s %s %s: openssl cms -verify accepts both profiles, and only the right document',
  (spec, scheme, digestAlgorithm) => {
    const document = randomBytes(300);
    for (const profile of ['CAdES-B-B', 'PAdES-B-B'] as const) {
      const cms = cmsFor({ leaf: leaves.get(spec)!, document, digestAlgorithm, scheme, profile });
      const verified = opensslCmsVerify({ cms, content: document, rootPem });
      expect(verified.output).toContain('Verification successful');
      const changed = Buffer.from(document);
      changed[17] ^= 1;
      expect(opensslCmsVerify({ cms, content: changed, rootPem }).ok).toBe(false);
    }
  },
);

test('signing-certificate-v2 holds the SHA-256 of the certificate; signingTime only in CAdES', () => {
  const leaf = leaves.get('ec:P-256')!;
  const document = randomBytes(50);
  const cades = cmsFor({ leaf, document, digestAlgorithm: 'SHA-256', scheme: 'ECDSA', profile: 'CAdES-B-B' });
  expect(opensslSigningCertificateV2Hash(cades)).toBe(createHash('sha256').update(leaf.der).digest('hex'));
  const print = (cms: Buffer): string =>
    runOpenssl(['cms', '-cmsout', '-print', '-inform', 'DER', '-in', 'c.p7s'], { 'c.p7s': cms }).stdout;
  expect(print(cades)).toContain('signingTime');
  const pades = cmsFor({ leaf, document, digestAlgorithm: 'SHA-256', scheme: 'ECDSA', profile: 'PAdES-B-B' });
  expect(print(pades)).not.toContain('signingTime');
  expect(print(pades)).toMatch(/contentType|messageDigest/);
});

test('a changed byte in the signed attributes or in the certificate fails verification', () => {
  const leaf = leaves.get('rsa:2048')!;
  const document = randomBytes(64);
  const cms = cmsFor({
    leaf,
    document,
    digestAlgorithm: 'SHA-256',
    scheme: 'RSASSA-PKCS1-v1_5',
    profile: 'CAdES-B-B',
  });
  const digest = createHash('sha256').update(document).digest();
  // The messageDigest value inside the signed attributes: its last byte.
  const inAttributes = Buffer.from(cms);
  inAttributes[cms.indexOf(digest) + 31] ^= 1;
  expect(opensslCmsVerify({ cms: inAttributes, content: document, rootPem }).ok).toBe(false);
  // A byte of the leaf certificate's signature inside the CMS.
  const inCertificate = Buffer.from(cms);
  inCertificate[cms.indexOf(leaf.der) + leaf.der.length - 5] ^= 1;
  expect(opensslCmsVerify({ cms: inCertificate, content: document, rootPem }).ok).toBe(false);
});

test('signerSignatures reads the signature value of a B-LT container whose crls hold a CRL and an OCSP response', () => {
  // The root's CRL as openssl makes it, and an OCSP response: what the pipeline's B-LT CAdES carries.
  const write = (file: string, text: string): void =>
    void execFileSync('tee', [join(dir, file)], { input: text, stdio: ['pipe', 'ignore', 'ignore'] });
  write('index.txt', '');
  write('crlnumber', '01\n');
  write(
    'crl.cnf',
    '[ca]\ndefault_ca=d\n[d]\ndatabase=index.txt\ncrlnumber=crlnumber\ndefault_md=sha256\ndefault_crl_days=1\n',
  );
  openssl(
    'ca',
    '-gencrl',
    '-config',
    'crl.cnf',
    '-keyfile',
    'root.key',
    '-cert',
    'root.pem',
    '-out',
    'root.crl',
  );
  const crl = pemToDer(readFileSync(join(dir, 'root.crl'), 'utf8').replace(/X509 CRL/g, 'CERTIFICATE'));
  // RSA PKCS#1 v1.5 at a fixed signing time: the signature value is known beforehand.
  const leaf = leaves.get('rsa:2048')!;
  const document = randomBytes(40);
  const signingTime = new Date('2026-11-28T10:00:00Z');
  const cms = cmsFor({
    leaf,
    document,
    digestAlgorithm: 'SHA-256',
    scheme: 'RSASSA-PKCS1-v1_5',
    profile: 'CAdES-B-B',
    signingTime,
    validationData: { certificates: [], crls: [crl], ocspResponses: [ocspErrorResponse('tryLater')] },
  });
  expect(opensslCmsVerify({ cms, content: document, rootPem }).output).toContain('Verification successful');
  const attributes = signedAttributes({
    profile: 'CAdES-B-B',
    digestAlgorithm: 'SHA-256',
    messageDigest: createHash('sha256').update(document).digest(),
    certificateDer: leaf.der,
    signingTime,
  });
  expect(signerSignatures(cms)).toEqual([sign('sha256', signedAttributesDer(attributes), leaf.key)]);
});
