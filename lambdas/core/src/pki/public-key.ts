/**
 * One public key, one encoding. A SubjectPublicKeyInfo can carry the same key in several byte forms
 * (an EC point compressed, uncompressed or hybrid; an RSA AlgorithmIdentifier with or without its NULL
 * parameters; integers with leading zeros, long-form lengths), and every form hashes differently. The
 * service compares keys, not bytes: this is the one encoding of each key it writes, registers, hashes,
 * certifies and logs, the form OpenSSL writes for a freshly generated key:
 *
 * - EC (RFC 5480): AlgorithmIdentifier { id-ecPublicKey, namedCurve P-256 or P-384 }, BIT STRING of the
 *   uncompressed point 04 || X || Y;
 * - RSA (RFC 3279 2.3.1, RFC 4055 1.2): AlgorithmIdentifier { rsaEncryption, NULL }, BIT STRING of the DER
 *   RSAPublicKey { modulus, publicExponent } with minimal positive INTEGERs.
 *
 * Pure: parsing with the @peculiar ASN.1 schemas, the point's decompression by node:crypto's ECDH (which
 * also refuses a point that is not on the curve). Bytes already in the canonical layout of a valid key
 * (canonicalLayoutKeyType, every key the HSM and keygen write) skip the parse: the same answer, cheaper.
 */
import { createHash, ECDH } from 'node:crypto';
import { AsnConvert } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier, SubjectPublicKeyInfo } from '@peculiar/asn1-x509';
import { ECParameters, id_ecPublicKey, id_secp256r1, id_secp384r1 } from '@peculiar/asn1-ecc';
import { RSAPublicKey, id_rsaEncryption } from '@peculiar/asn1-rsa';
import { KEY_TYPE_SPECS, type KeyType } from '../shared/algorithms';
import { canonicalLayoutKeyType } from './spki-layout';

/** A key in its one encoding, and whether the bytes it came in were already that encoding. */
export interface CanonicalPublicKey {
  readonly keyType: KeyType;
  /** The canonical SubjectPublicKeyInfo DER. */
  readonly spki: Buffer;
  /** Lower-case hex SHA-256 of `spki`: the key's one hash (registers, audit events). */
  readonly hash: string;
  /** True when the input bytes are exactly `spki`. */
  readonly canonical: boolean;
}

/** The curves the service offers, by their OID, with their OpenSSL name and key type. */
const CURVES: ReadonlyArray<{ oid: string; openssl: string; keyType: KeyType }> = [
  { oid: id_secp256r1, openssl: 'prime256v1', keyType: 'EC-P256' },
  { oid: id_secp384r1, openssl: 'secp384r1', keyType: 'EC-P384' },
];

const sha256Hex = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

/** A DER INTEGER's content for a non-negative value: no leading zero bytes but one before a high bit. */
function positiveInteger(bytes: Buffer): Buffer | undefined {
  if (bytes.length === 0 || bytes[0] & 0x80) return undefined; // empty or negative
  let i = 0;
  while (i < bytes.length - 1 && bytes[i] === 0 && !(bytes[i + 1] & 0x80)) i++;
  const value = bytes.subarray(i);
  return value.length === 1 && value[0] === 0 ? undefined : value;
}

function bitLength(magnitude: Buffer): number {
  let i = 0;
  while (i < magnitude.length && magnitude[i] === 0) i++;
  if (i === magnitude.length) return 0;
  return (magnitude.length - i) * 8 - Math.clz32(magnitude[i]) + 24;
}

const arrayBuffer = (bytes: Buffer): ArrayBuffer => new Uint8Array(bytes).buffer;

function spkiDer(algorithm: AlgorithmIdentifier, subjectPublicKey: Buffer): Buffer {
  return Buffer.from(
    AsnConvert.serialize(
      new SubjectPublicKeyInfo({ algorithm, subjectPublicKey: arrayBuffer(subjectPublicKey) }),
    ),
  );
}

function ecKey(info: SubjectPublicKeyInfo): { keyType: KeyType; spki: Buffer } | undefined {
  if (!info.algorithm.parameters) return undefined;
  const params = AsnConvert.parse(info.algorithm.parameters, ECParameters);
  // Only a named curve: explicit parameters and implicitCurve are not a key type the service offers.
  const curve = CURVES.find((c) => c.oid === params.namedCurve);
  if (!curve) return undefined;
  const point = ECDH.convertKey(
    Buffer.from(info.subjectPublicKey),
    curve.openssl,
    undefined,
    undefined,
    'uncompressed',
  ) as Buffer;
  const namedCurve = Buffer.from(AsnConvert.serialize(new ECParameters({ namedCurve: curve.oid })));
  const algorithm = new AlgorithmIdentifier({
    algorithm: id_ecPublicKey,
    parameters: arrayBuffer(namedCurve),
  });
  return { keyType: curve.keyType, spki: spkiDer(algorithm, point) };
}

function rsaKey(info: SubjectPublicKeyInfo): { keyType: KeyType; spki: Buffer } | undefined {
  const parsed = AsnConvert.parse(info.subjectPublicKey, RSAPublicKey);
  const modulus = positiveInteger(Buffer.from(parsed.modulus));
  const exponent = positiveInteger(Buffer.from(parsed.publicExponent));
  if (!modulus || !exponent) return undefined;
  const bits = bitLength(modulus);
  const keyType = (Object.keys(KEY_TYPE_SPECS) as KeyType[]).find(
    (t) => KEY_TYPE_SPECS[t].family === 'RSA' && KEY_TYPE_SPECS[t].bits === bits,
  );
  if (!keyType) return undefined;
  const rsaPublicKey = Buffer.from(
    AsnConvert.serialize(
      new RSAPublicKey({ modulus: arrayBuffer(modulus), publicExponent: arrayBuffer(exponent) }),
    ),
  );
  // RFC 3279 2.3.1: the parameters field MUST have ASN.1 type NULL.
  const algorithm = new AlgorithmIdentifier({ algorithm: id_rsaEncryption, parameters: null });
  return { keyType, spki: spkiDer(algorithm, rsaPublicKey) };
}

/**
 * The canonical form of a SubjectPublicKeyInfo, whatever encoding of the key it came in, with the key
 * type; undefined when it is no key of a type the service offers (or not a key at all).
 */
export function canonicalPublicKey(spki: Uint8Array): CanonicalPublicKey | undefined {
  const input = Buffer.from(spki);
  const keyType = canonicalLayoutKeyType(input);
  if (keyType) return { keyType, spki: input, hash: sha256Hex(input), canonical: true };
  return parsedPublicKey(input);
}

/** canonicalPublicKey by the full parse: any encoding (also the canonical one). */
export function parsedPublicKey(input: Buffer): CanonicalPublicKey | undefined {
  let key: { keyType: KeyType; spki: Buffer } | undefined;
  try {
    const info = AsnConvert.parse(input, SubjectPublicKeyInfo);
    if (info.algorithm.algorithm === id_ecPublicKey) key = ecKey(info);
    else if (info.algorithm.algorithm === id_rsaEncryption) key = rsaKey(info);
  } catch {
    return undefined; // not DER of a SubjectPublicKeyInfo, or a point not on its curve
  }
  if (!key) return undefined;
  return { ...key, hash: sha256Hex(key.spki), canonical: key.spki.equals(input) };
}
