/**
 * fast-check arbitraries of SubjectPublicKeyInfo bytes for the property tests of the canonical-layout
 * fast paths (canonicalPublicKey, keyTypeOfSpki, the CSR reader): real keys of every key type as OpenSSL
 * writes them, and what an attacker could make of them (other encodings of the same key, points off their
 * curve or with a coordinate not below p, other RSA exponents and modulus sizes, flipped, cut and added
 * octets).
 */
import { ECDH, generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { AsnConvert } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier, SubjectPublicKeyInfo } from '@peculiar/asn1-x509';
import { id_rsaEncryption, RSAPublicKey } from '@peculiar/asn1-rsa';
import type { KeyType } from '@pipeline/core/shared';

const spkiOf = (key: { export(o: { type: 'spki'; format: 'der' }): Buffer }): Buffer =>
  key.export({ type: 'spki', format: 'der' });

/** Canonical SPKIs of real keys: several of each EC curve, two of each RSA size (RSA keys are slow to make). */
export function realKeys(): ReadonlyArray<{ keyType: KeyType; spki: Buffer }> {
  const ec = (keyType: KeyType, namedCurve: string, n: number) =>
    Array.from({ length: n }, () => ({
      keyType,
      spki: spkiOf(generateKeyPairSync('ec', { namedCurve }).publicKey),
    }));
  const rsa = (keyType: KeyType, modulusLength: number, n: number) =>
    Array.from({ length: n }, () => ({
      keyType,
      spki: spkiOf(generateKeyPairSync('rsa', { modulusLength }).publicKey),
    }));
  return [
    ...ec('EC-P256', 'P-256', 8),
    ...ec('EC-P384', 'P-384', 8),
    ...rsa('RSA-2048', 2048, 2),
    ...rsa('RSA-3072', 3072, 2),
    ...rsa('RSA-4096', 4096, 2),
  ];
}

const EC = [
  { header: '3059301306072a8648ce3d020106082a8648ce3d030107034200', curve: 'prime256v1', size: 32 },
  { header: '3076301006072a8648ce3d020106052b81040022036200', curve: 'secp384r1', size: 48 },
] as const;
const P = {
  32: BigInt('0xffffffff00000001000000000000000000000000ffffffffffffffffffffffff'),
  48: BigInt(
    '0xfffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffeffffffff0000000000000000ffffffff',
  ),
};

const B = {
  32: BigInt('0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604b'),
  48: BigInt(
    '0xb3312fa7e23ee7e4988e056be3f82d19181d9c6efe8141120314088f5013875ac656398d8a2ed19d2a85c8edd3ec2aef',
  ),
};

function power(base: bigint, exponent: bigint, p: bigint): bigint {
  let result = 1n;
  for (let b = base % p, e = exponent; e > 0n; e >>= 1n, b = (b * b) % p)
    if (e & 1n) result = (result * b) % p;
  return result;
}

/** A point on the curve with a small x (both curves have p = 3 mod 4: the square root is a power). */
function smallPoint(size: 32 | 48): { x: bigint; y: bigint } {
  const p = P[size];
  for (let x = 1n; ; x++) {
    const right = (((x * x * x - 3n * x + B[size]) % p) + p) % p;
    const y = power(right, (p + 1n) / 4n, p);
    if ((y * y) % p === right) return { x, y };
  }
}

const bytesOf = (value: bigint, size: number): Buffer =>
  Buffer.from(value.toString(16).padStart(size * 2, '0'), 'hex');
const bigOf = (bytes: Buffer): bigint => BigInt('0x' + bytes.toString('hex'));

/** An EC SPKI of the point (whatever it is), in the header of the curve whose coordinates have that size. */
function ecSpki(point: Buffer, size: 32 | 48): Buffer {
  const { header } = EC.find((e) => e.size === size)!;
  const prefix = Buffer.from(header, 'hex');
  // The BIT STRING's length octet follows the point's real length (a compressed point is shorter).
  prefix[prefix.length - 2] = point.length + 1;
  prefix[1] = prefix.length - 2 + point.length;
  return Buffer.concat([prefix, point]);
}

/** What an attacker could make of a canonical EC SPKI: same key other forms, other points. */
function ecVariants(spki: Buffer): fc.Arbitrary<Buffer> {
  const e = EC.find((c) => spki.length === c.header.length / 2 + 1 + 2 * c.size)!;
  const size = e.size;
  const point = spki.subarray(spki.length - 1 - 2 * size);
  const x = bigOf(point.subarray(1, 1 + size));
  const y = bigOf(point.subarray(1 + size));
  const p = P[size];
  const at = (xv: bigint, yv: bigint): Buffer =>
    ecSpki(Buffer.concat([Buffer.from([4]), bytesOf(xv, size), bytesOf(yv, size)]), size);
  const form = (f: 'compressed' | 'hybrid'): Buffer =>
    ecSpki(ECDH.convertKey(point, e.curve, undefined, undefined, f) as Buffer, size);
  return fc.oneof(
    fc.constant(at(x, p - y)), // the key's negation: a valid point
    fc.constant(form('compressed')),
    fc.constant(form('hybrid')),
    fc.bigInt({ min: 0n, max: 2n ** BigInt(size * 8) - 1n }).map((v) => at(x, v)),
    fc.bigInt({ min: 0n, max: 2n ** BigInt(size * 8) - 1n }).map((v) => at(v, y)),
    fc.constantFrom(p, p + 1n, 2n ** BigInt(size * 8) - 1n).map((v) => at(v, y)),
    fc.constantFrom(p, p + 1n, 2n ** BigInt(size * 8) - 1n).map((v) => at(x, v)),
    // y + p (if it fits): the same residue, not reduced
    fc.constant(y + p < 2n ** BigInt(size * 8) ? at(x, y + p) : at(x, y)),
    fc.constant(at(0n, 0n)),
    // a point on the curve, and the same with x + p (the same residue, not reduced: OpenSSL refuses it)
    fc
      .constant(smallPoint(size))
      .chain(({ x: sx, y: sy }) => fc.constantFrom(at(sx, sy), at(sx + p, sy), at(sx, p - sy))),
  );
}

/** What an attacker could make of a canonical RSA SPKI: other encodings, exponents, modulus bits. */
function rsaVariants(spki: Buffer): fc.Arbitrary<Buffer> {
  const info = AsnConvert.parse(spki, SubjectPublicKeyInfo);
  const key = AsnConvert.parse(info.subjectPublicKey, RSAPublicKey);
  const modulus = Buffer.from(key.modulus);
  const build = (m: Buffer, e: Buffer, withNull = true): Buffer =>
    Buffer.from(
      AsnConvert.serialize(
        new SubjectPublicKeyInfo({
          algorithm: new AlgorithmIdentifier({
            algorithm: id_rsaEncryption,
            ...(withNull ? { parameters: null } : {}),
          }),
          subjectPublicKey: new Uint8Array(
            AsnConvert.serialize(
              new RSAPublicKey({
                modulus: new Uint8Array(m).buffer,
                publicExponent: new Uint8Array(e).buffer,
              }),
            ),
          ).buffer,
        }),
      ),
    );
  const e65537 = Buffer.from([1, 0, 1]);
  return fc.oneof(
    fc.constant(build(modulus, e65537, false)),
    fc
      .constantFrom(Buffer.from([3]), Buffer.from([0, 1, 0, 1]), Buffer.from([1, 0, 0, 1]))
      .map((e) => build(modulus, e)),
    // the modulus's high bit cleared (one bit short; with or without a needless zero octet)
    fc.constant(build(Buffer.concat([Buffer.from([modulus[1] & 0x7f]), modulus.subarray(2)]), e65537)),
    fc.constant(build(Buffer.concat([Buffer.from([0, modulus[1] & 0x7f]), modulus.subarray(2)]), e65537)),
    // any modulus of that size (even, small factors: the layout cannot tell, nor can OpenSSL's decoder)
    fc
      .uint8Array({ minLength: modulus.length - 1, maxLength: modulus.length - 1 })
      .map((m) => build(Buffer.concat([Buffer.from([0]), m]), e65537)),
    // an extra leading zero octet on the modulus (not minimal)
    fc.constant(build(Buffer.concat([Buffer.from([0]), modulus]), e65537)),
  );
}

/** Bytes flipped, cut off or added anywhere. */
function damaged(spki: Buffer): fc.Arbitrary<Buffer> {
  return fc.oneof(
    fc.tuple(fc.nat({ max: spki.length - 1 }), fc.integer({ min: 1, max: 255 })).map(([i, x]) => {
      const copy = Buffer.from(spki);
      copy[i] ^= x;
      return copy;
    }),
    fc.nat({ max: spki.length - 1 }).map((n) => spki.subarray(0, n)),
    fc.uint8Array({ minLength: 1, maxLength: 4 }).map((extra) => Buffer.concat([spki, extra])),
  );
}

/** Any SPKI an attacker could send for these keys: the keys themselves, their variants, damaged copies. */
export function spkiInputs(keys: ReadonlyArray<{ spki: Buffer }>): fc.Arbitrary<Buffer> {
  return fc.constantFrom(...keys.map((k) => k.spki)).chain((spki) => {
    const variants = spki[0] === 0x30 && spki.length < 130 ? ecVariants(spki) : rsaVariants(spki);
    return fc.oneof(fc.constant(spki), variants, damaged(spki), variants.chain(damaged));
  });
}
