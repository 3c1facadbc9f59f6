/**
 * The canonical public key: every encoding of one key maps to one SubjectPublicKeyInfo, the one the
 * openssl command line writes (`openssl pkey -pubin -outform DER`; for EC, with the point uncompressed),
 * and only that encoding is called canonical.
 */
import { execFileSync } from 'node:child_process';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AsnConvert } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier, SubjectPublicKeyInfo } from '@peculiar/asn1-x509';
import { ECParameters, id_ecPublicKey, id_secp256r1 } from '@peculiar/asn1-ecc';
import { RSAPublicKey, id_rsaEncryption } from '@peculiar/asn1-rsa';
import { canonicalPublicKey } from '../src/pki/public-key';

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'public-key-'));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Runs openssl on DER in, DER out (files in the test's directory). */
function openssl(input: Buffer, ...args: string[]): Buffer {
  const inFile = join(dir, 'in.der');
  const outFile = join(dir, 'out.der');
  writeFileSync(inFile, input);
  execFileSync('openssl', [...args, '-in', inFile, '-inform', 'DER', '-outform', 'DER', '-out', outFile], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return readFileSync(outFile);
}

/** A fresh key pair made by openssl, its public key as openssl writes it. */
function opensslPublicKey(algorithm: string, option: string): Buffer {
  const keyFile = join(dir, 'key.pem');
  execFileSync('openssl', ['genpkey', '-algorithm', algorithm, '-pkeyopt', option, '-out', keyFile], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const outFile = join(dir, 'pub.der');
  execFileSync('openssl', ['pkey', '-in', keyFile, '-pubout', '-outform', 'DER', '-out', outFile], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return readFileSync(outFile);
}

const ecForm = (spki: Buffer, form: 'compressed' | 'uncompressed' | 'hybrid'): Buffer =>
  openssl(spki, 'ec', '-pubin', '-pubout', '-conv_form', form);

const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

function rebuilt(spki: Buffer, change: (info: SubjectPublicKeyInfo) => void): Buffer {
  const info = AsnConvert.parse(spki, SubjectPublicKeyInfo);
  change(info);
  return Buffer.from(AsnConvert.serialize(info));
}

const withoutNull = (spki: Buffer): Buffer =>
  rebuilt(spki, (info) => {
    info.algorithm = new AlgorithmIdentifier({ algorithm: id_rsaEncryption });
  });

describe.each([
  ['EC-P256', 'EC', 'ec_paramgen_curve:P-256', 91, 59],
  ['EC-P384', 'EC', 'ec_paramgen_curve:P-384', 120, 72],
] as const)('%s', (keyType, algorithm, option, uncompressedLength, compressedLength) => {
  let spki: Buffer;
  beforeAll(() => {
    spki = opensslPublicKey(algorithm, option);
  });

  test("openssl's encoding is canonical: uncompressed point, named curve", () => {
    expect(spki.length).toBe(uncompressedLength);
    expect(ecForm(spki, 'uncompressed')).toEqual(spki);
    expect(canonicalPublicKey(spki)).toEqual({ keyType, spki, hash: sha256(spki), canonical: true });
  });

  test.each(['compressed', 'hybrid'] as const)(
    'the %s point is the same key: canonicalised to the uncompressed form, and not canonical',
    (form) => {
      const other = ecForm(spki, form);
      expect(other).not.toEqual(spki);
      if (form === 'compressed') expect(other.length).toBe(compressedLength);
      // openssl itself reads it as the same key: asked for the uncompressed form it writes `spki`.
      expect(ecForm(other, 'uncompressed')).toEqual(spki);
      expect(canonicalPublicKey(other)).toEqual({ keyType, spki, hash: sha256(spki), canonical: false });
    },
  );

  test('a point not on the curve, or a curve given by explicit parameters, is no key', () => {
    const info = AsnConvert.parse(spki, SubjectPublicKeyInfo);
    const point = Buffer.from(info.subjectPublicKey);
    point[point.length - 1] ^= 1;
    expect(
      canonicalPublicKey(
        rebuilt(spki, (i) => {
          i.subjectPublicKey = new Uint8Array(point).buffer;
        }),
      ),
    ).toBeUndefined();
    const explicit = openssl(spki, 'ec', '-pubin', '-pubout', '-param_enc', 'explicit');
    expect(explicit.length).toBeGreaterThan(spki.length + 100);
    expect(canonicalPublicKey(explicit)).toBeUndefined();
  });
});

describe('RSA', () => {
  let spki: Buffer;
  beforeAll(() => {
    spki = opensslPublicKey('RSA', 'rsa_keygen_bits:2048');
  });

  test("openssl's encoding is canonical: rsaEncryption with NULL parameters", () => {
    expect(spki.length).toBe(294);
    expect(canonicalPublicKey(spki)).toEqual({
      keyType: 'RSA-2048',
      spki,
      hash: sha256(spki),
      canonical: true,
    });
  });

  test('without the NULL parameters it is the same key: canonicalised as openssl writes it, not canonical', () => {
    const other = withoutNull(spki);
    expect(other.length).toBe(spki.length - 2);
    expect(openssl(other, 'pkey', '-pubin', '-pubout')).toEqual(spki);
    expect(canonicalPublicKey(other)).toEqual({
      keyType: 'RSA-2048',
      spki,
      hash: sha256(spki),
      canonical: false,
    });
  });

  test('a modulus with a redundant leading zero, or a long-form length, is the same key, not canonical', () => {
    const info = AsnConvert.parse(spki, SubjectPublicKeyInfo);
    const key = AsnConvert.parse(info.subjectPublicKey, RSAPublicKey);
    const padded = rebuilt(spki, (i) => {
      const modulus = Buffer.concat([Buffer.from([0]), Buffer.from(key.modulus)]);
      i.subjectPublicKey = AsnConvert.serialize(
        new RSAPublicKey({ modulus: new Uint8Array(modulus).buffer, publicExponent: key.publicExponent }),
      );
    });
    expect(padded.length).toBe(spki.length + 1);
    expect(canonicalPublicKey(padded)).toMatchObject({ spki, canonical: false });
    // The outer SEQUENCE's length in a longer form than DER allows (0x82 0x0122 -> 0x83 0x000122).
    expect(spki.subarray(0, 2)).toEqual(Buffer.from([0x30, 0x82]));
    const longForm = Buffer.concat([Buffer.from([0x30, 0x83, 0x00]), spki.subarray(2)]);
    const canonical = canonicalPublicKey(longForm);
    if (canonical) expect(canonical).toMatchObject({ spki, canonical: false });
    expect(canonical?.canonical).not.toBe(true);
  });

  test('a key size the service does not offer is no key', () => {
    const small = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({
      type: 'spki',
      format: 'der',
    });
    expect(canonicalPublicKey(small)).toBeUndefined();
  });
});

test('anything else is no key: garbage, trailing bytes, another algorithm', () => {
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({
    type: 'spki',
    format: 'der',
  });
  expect(canonicalPublicKey(Buffer.from('not a key'))).toBeUndefined();
  expect(canonicalPublicKey(Buffer.alloc(0))).toBeUndefined();
  const trailing = Buffer.concat([ec, Buffer.from([0])]);
  expect(canonicalPublicKey(trailing)?.canonical).not.toBe(true);
  const ed = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'der' });
  expect(canonicalPublicKey(ed)).toBeUndefined();
  // An EC key whose AlgorithmIdentifier lacks the curve.
  const noCurve = rebuilt(ec, (info) => {
    info.algorithm = new AlgorithmIdentifier({ algorithm: id_ecPublicKey });
  });
  expect(canonicalPublicKey(noCurve)).toBeUndefined();
  // The same key with its curve: canonical again.
  const named = rebuilt(noCurve, (info) => {
    info.algorithm = new AlgorithmIdentifier({
      algorithm: id_ecPublicKey,
      parameters: AsnConvert.serialize(new ECParameters({ namedCurve: id_secp256r1 })),
    });
  });
  expect(canonicalPublicKey(named)).toMatchObject({ spki: ec, canonical: true });
});
