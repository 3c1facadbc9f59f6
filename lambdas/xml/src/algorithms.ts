/**
 * The XML signature and digest algorithms this service accepts and produces (XMLDSig 1.1, RFC 6931),
 * registered on xml-crypto in place of its defaults: no SHA-1 and no HMAC, and ECDSA (which xml-crypto
 * lacks) with its XML encoding, r‖s of fixed length (RFC 4050), not DER.
 */
import { createHash, createPublicKey, verify as cryptoVerify, constants, type KeyLike } from 'node:crypto';
import type { ErrorFirstCallback, HashAlgorithm, SignatureAlgorithm } from 'xml-crypto';
import { XmlAlgorithmNotSupportedError } from './errors';

export type XmlDigest = 'SHA-256' | 'SHA-384' | 'SHA-512';
type Family = 'rsa-pkcs1' | 'rsa-pss' | 'ecdsa';

export const DIGEST_URIS: Readonly<Record<XmlDigest, string>> = {
  'SHA-256': 'http://www.w3.org/2001/04/xmlenc#sha256',
  'SHA-384': 'http://www.w3.org/2001/04/xmldsig-more#sha384',
  'SHA-512': 'http://www.w3.org/2001/04/xmlenc#sha512',
};

/** Signature method URI → key family and digest. */
export const SIGNATURE_METHODS: Readonly<Record<string, { family: Family; digest: XmlDigest }>> = {
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256': { family: 'rsa-pkcs1', digest: 'SHA-256' },
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha384': { family: 'rsa-pkcs1', digest: 'SHA-384' },
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha512': { family: 'rsa-pkcs1', digest: 'SHA-512' },
  'http://www.w3.org/2007/05/xmldsig-more#sha256-rsa-MGF1': { family: 'rsa-pss', digest: 'SHA-256' },
  'http://www.w3.org/2007/05/xmldsig-more#sha384-rsa-MGF1': { family: 'rsa-pss', digest: 'SHA-384' },
  'http://www.w3.org/2007/05/xmldsig-more#sha512-rsa-MGF1': { family: 'rsa-pss', digest: 'SHA-512' },
  'http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256': { family: 'ecdsa', digest: 'SHA-256' },
  'http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha384': { family: 'ecdsa', digest: 'SHA-384' },
  'http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha512': { family: 'ecdsa', digest: 'SHA-512' },
};

const NODE_HASH: Readonly<Record<XmlDigest, string>> = {
  'SHA-256': 'sha256',
  'SHA-384': 'sha384',
  'SHA-512': 'sha512',
};

/** The digest a DigestMethod URI names; throws for any other (SHA-1 among them). */
export function digestOfUri(uri: string): XmlDigest {
  const digest = (Object.keys(DIGEST_URIS) as XmlDigest[]).find((d) => DIGEST_URIS[d] === uri);
  if (digest === undefined) throw new XmlAlgorithmNotSupportedError('the digest method is not supported');
  return digest;
}

/** The family and digest a SignatureMethod URI names; throws for any other. */
export function signatureMethod(uri: string): { family: Family; digest: XmlDigest } {
  const method = Object.hasOwn(SIGNATURE_METHODS, uri) ? SIGNATURE_METHODS[uri] : undefined;
  if (method === undefined) throw new XmlAlgorithmNotSupportedError('the signature method is not supported');
  return method;
}

/** Digest of octets as XMLDSig writes it (base64). */
export function xmlDigest(digest: XmlDigest, octets: string | Uint8Array): string {
  return createHash(NODE_HASH[digest]).update(octets).digest('base64');
}

/** xml-crypto's digest classes for our three digests. */
export function hashAlgorithms(): Record<string, new () => HashAlgorithm> {
  return Object.fromEntries(
    (Object.keys(DIGEST_URIS) as XmlDigest[]).map((digest) => [
      DIGEST_URIS[digest],
      class implements HashAlgorithm {
        public getHash(xml: string): string {
          return xmlDigest(digest, xml);
        }
        public getAlgorithmName(): string {
          return DIGEST_URIS[digest];
        }
      },
    ]),
  );
}

/** Verifies one signature value (base64) over `material` with a public key or certificate. */
export function verifyValue(uri: string, material: string, key: KeyLike, signatureValue: string): boolean {
  const { family, digest } = signatureMethod(uri);
  return cryptoVerify(
    NODE_HASH[digest],
    Buffer.from(material, 'utf8'),
    {
      key: createPublicKey(key as string),
      ...(family === 'rsa-pss'
        ? { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST }
        : {}),
      ...(family === 'ecdsa' ? { dsaEncoding: 'ieee-p1363' as const } : {}),
    },
    Buffer.from(signatureValue, 'base64'),
  );
}

/** xml-crypto's verify-only classes for every method we accept (signing goes through an XmlSigner). */
export function verifyingAlgorithms(): Record<string, new () => SignatureAlgorithm> {
  return Object.fromEntries(
    Object.keys(SIGNATURE_METHODS).map((uri) => [
      uri,
      class implements SignatureAlgorithm {
        public getSignature(): never {
          throw new XmlAlgorithmNotSupportedError('this algorithm only verifies');
        }
        public verifySignature(
          material: string,
          key: KeyLike,
          signatureValue: string,
          callback?: ErrorFirstCallback<boolean>,
        ): boolean {
          const valid = verifyValue(uri, material, key, signatureValue);
          callback?.(null, valid);
          return valid;
        }
        public getAlgorithmName(): string {
          return uri;
        }
      } as unknown as new () => SignatureAlgorithm,
    ]),
  );
}
