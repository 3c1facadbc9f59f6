/**
 * The fast path of canonicalPublicKey and keyTypeOfSpki: the canonical SubjectPublicKeyInfo of each key
 * type the service offers is a fixed byte layout, a fixed header and the key's own octets:
 *
 * - EC P-256 / P-384: the header up to the point's 04 octet, then X || Y (32 / 48 octets each), the point
 *   on its curve (checked here: x, y below p and y² = x³ - 3x + b mod p, what OpenSSL checks on decode);
 * - RSA 2048 / 3072 / 4096: the header up to the modulus (INTEGER with its sign octet 00), the modulus with
 *   its high bit set (exactly that many bits), then the exponent INTEGER 65537.
 *
 * Bytes that match a layout are the canonical encoding of a valid key of that type; anything else (another
 * encoding, another exponent, another key) is left to the full parse of the callers, which decides.
 */
import type { KeyType } from '../shared/algorithms';

interface EcLayout {
  readonly keyType: KeyType;
  readonly header: Buffer;
  /** Coordinate length in octets. */
  readonly size: number;
  readonly p: bigint;
  readonly b: bigint;
}

interface RsaLayout {
  readonly keyType: KeyType;
  readonly header: Buffer;
  readonly modulusLength: number;
}

const EC_LAYOUTS: readonly EcLayout[] = [
  {
    keyType: 'EC-P256',
    // SEQUENCE { SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING 00 04 ... }
    header: Buffer.from('3059301306072a8648ce3d020106082a8648ce3d03010703420004', 'hex'),
    size: 32,
    p: BigInt('0xffffffff00000001000000000000000000000000ffffffffffffffffffffffff'),
    b: BigInt('0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604b'),
  },
  {
    keyType: 'EC-P384',
    // SEQUENCE { SEQUENCE { id-ecPublicKey, secp384r1 }, BIT STRING 00 04 ... }
    header: Buffer.from('3076301006072a8648ce3d020106052b8104002203620004', 'hex'),
    size: 48,
    p: BigInt(
      '0xfffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffeffffffff0000000000000000ffffffff',
    ),
    b: BigInt(
      '0xb3312fa7e23ee7e4988e056be3f82d19181d9c6efe8141120314088f5013875ac656398d8a2ed19d2a85c8edd3ec2aef',
    ),
  },
];

/** A DER header (tag and definite length) for `length` content octets. */
function header(tag: number, length: number): Buffer {
  if (length < 0x80) return Buffer.from([tag, length]);
  const octets: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) octets.unshift(n % 256);
  return Buffer.from([tag, 0x80 | octets.length, ...octets]);
}

/** INTEGER 65537. */
const RSA_EXPONENT = Buffer.from('0203010001', 'hex');
/** AlgorithmIdentifier { rsaEncryption, NULL }. */
const RSA_ALGORITHM = Buffer.from('300d06092a864886f70d0101010500', 'hex');

function rsaLayout(keyType: KeyType, bits: number): RsaLayout {
  const modulusLength = bits / 8;
  const integer = header(0x02, modulusLength + 1);
  const rsaPublicKeyLength = integer.length + modulusLength + 1 + RSA_EXPONENT.length;
  const rsaPublicKey = header(0x30, rsaPublicKeyLength);
  const bitStringLength = 1 + rsaPublicKey.length + rsaPublicKeyLength;
  const bitString = header(0x03, bitStringLength);
  const spkiLength = RSA_ALGORITHM.length + bitString.length + bitStringLength;
  return {
    keyType,
    modulusLength,
    header: Buffer.concat([
      header(0x30, spkiLength),
      RSA_ALGORITHM,
      bitString,
      Buffer.from([0]),
      rsaPublicKey,
      integer,
      Buffer.from([0]),
    ]),
  };
}

const RSA_LAYOUTS: readonly RsaLayout[] = [
  rsaLayout('RSA-2048', 2048),
  rsaLayout('RSA-3072', 3072),
  rsaLayout('RSA-4096', 4096),
];

const startsWith = (bytes: Uint8Array, prefix: Buffer): boolean =>
  prefix.equals(Buffer.from(bytes.buffer, bytes.byteOffset, prefix.length));

const toBigInt = (bytes: Uint8Array): bigint =>
  BigInt('0x' + Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('hex'));

/** y² = x³ - 3x + b (mod p), both coordinates reduced. */
function onCurve(layout: EcLayout, point: Uint8Array): boolean {
  const x = toBigInt(point.subarray(0, layout.size));
  const y = toBigInt(point.subarray(layout.size));
  const { p, b } = layout;
  if (x >= p || y >= p) return false;
  const right = (((((x * x) % p) * x) % p) - 3n * x + b) % p;
  return (y * y) % p === (right + p) % p;
}

/**
 * The key type when `spki` is exactly the canonical SubjectPublicKeyInfo of a valid key of a type the
 * service offers; undefined otherwise (not canonical, or not such a key: the full parse decides).
 */
export function canonicalLayoutKeyType(spki: Uint8Array): KeyType | undefined {
  for (const layout of EC_LAYOUTS) {
    if (spki.length !== layout.header.length + 2 * layout.size || !startsWith(spki, layout.header)) continue;
    return onCurve(layout, spki.subarray(layout.header.length)) ? layout.keyType : undefined;
  }
  for (const layout of RSA_LAYOUTS) {
    const end = layout.header.length + layout.modulusLength;
    if (spki.length !== end + RSA_EXPONENT.length || !startsWith(spki, layout.header)) continue;
    // The modulus has exactly its type's bits, and the exponent is 65537.
    if (!(spki[layout.header.length] & 0x80)) return undefined;
    return startsWith(spki.subarray(end), RSA_EXPONENT) ? layout.keyType : undefined;
  }
  return undefined;
}
