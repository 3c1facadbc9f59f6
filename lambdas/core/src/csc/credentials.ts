import {
  DIGEST_ALGORITHMS,
  DIGEST_LENGTH,
  KEY_TYPE_SPECS,
  KEY_TYPES,
  signatureAlgorithmsFor,
  type DigestAlgorithm,
  type KeyType,
  type SignatureAlgorithm,
} from '../shared/algorithms';
import { MAX_DOCUMENTS } from '../identity/binding';
import { CscError } from './errors';

/**
 * The CSC credentials of this service: one-time credentials. A credential is not a stored key of the
 * citizen: it names a key type and a signature scheme, and each authorized use takes a fresh key pair from
 * the pool, certified for the citizen the identity provider authenticated, used for the authorized
 * hashes and destroyed. Its id therefore fixes, at authorization time, everything the login's nonce binds
 * besides the hashes: the key type and the signature algorithm.
 */
interface OneTimeCredential {
  readonly credentialID: string;
  readonly keyType: KeyType;
  readonly signatureAlgorithm: SignatureAlgorithm;
  /**
   * A login's own credential (`<type>.<request id>`): the request that created it, whose key, certified
   * for that login's citizen, signs once (docs/csc.md, "Certificate before hash").
   */
  readonly credentialRequestId?: string;
}

/** The credential's id: `onetime-<key type>[-pss]`, lower-case (e.g. `onetime-ec-p256`, `onetime-rsa-3072-pss`). */
function credentialIdOf(keyType: KeyType, signatureAlgorithm: SignatureAlgorithm): string {
  return `onetime-${keyType.toLowerCase()}${signatureAlgorithm === 'RSASSA-PSS' ? '-pss' : ''}`;
}

export const CSC_CREDENTIALS: readonly OneTimeCredential[] = KEY_TYPES.flatMap((keyType) =>
  signatureAlgorithmsFor(keyType).map((signatureAlgorithm) => ({
    credentialID: credentialIdOf(keyType, signatureAlgorithm),
    keyType,
    signatureAlgorithm,
  })),
);

/** What a client asking for "a credential of this service" without naming one gets (CSC signatureQualifier). */
export const DEFAULT_CREDENTIAL_ID = 'onetime-ec-p256';

const REQUEST_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The id of the one-time credential a creation request made: its type's id, a dot, the request id. */
export function createdCredentialId(type: OneTimeCredential, requestId: string): string {
  return `${type.credentialID}.${requestId}`;
}

/**
 * The credential with this id (a type, or a login's own credential of a type), or `invalid_request`
 * (CSC: "Invalid parameter credentialID").
 */
export function credentialById(credentialID: unknown): OneTimeCredential {
  const [typeId, requestId, extra] = typeof credentialID === 'string' ? credentialID.split('.') : [];
  const found = CSC_CREDENTIALS.find((c) => c.credentialID === typeId);
  if (!found || extra !== undefined) throw new CscError('invalid_request', 'Invalid parameter credentialID');
  if (requestId === undefined) return found;
  if (!REQUEST_ID.test(requestId)) throw new CscError('invalid_request', 'Invalid parameter credentialID');
  return { ...found, credentialID: credentialID as string, credentialRequestId: requestId };
}

/** Hash algorithm OIDs (NIST) of the digests the pipeline signs. */
export const HASH_ALGORITHM_OIDS: Readonly<Record<DigestAlgorithm, string>> = {
  'SHA-256': '2.16.840.1.101.3.4.2.1',
  'SHA-384': '2.16.840.1.101.3.4.2.2',
  'SHA-512': '2.16.840.1.101.3.4.2.3',
};

export function digestAlgorithmOf(oid: unknown): DigestAlgorithm {
  const found = DIGEST_ALGORITHMS.find((a) => HASH_ALGORITHM_OIDS[a] === oid);
  if (!found) throw new CscError('invalid_request', 'Invalid parameter hashAlgorithmOID');
  return found;
}

const KEY_ALGORITHM_OID = { RSA: '1.2.840.113549.1.1.1', EC: '1.2.840.10045.2.1' } as const;
const CURVE_OID = { 'P-256': '1.2.840.10045.3.1.7', 'P-384': '1.3.132.0.34' } as const;
const RSASSA_PSS_OID = '1.2.840.113549.1.1.10';
const WITH_HASH_OIDS: Readonly<Record<'RSASSA-PKCS1-v1_5' | 'ECDSA', Record<DigestAlgorithm, string>>> = {
  'RSASSA-PKCS1-v1_5': {
    'SHA-256': '1.2.840.113549.1.1.11',
    'SHA-384': '1.2.840.113549.1.1.12',
    'SHA-512': '1.2.840.113549.1.1.13',
  },
  ECDSA: {
    'SHA-256': '1.2.840.10045.4.3.2',
    'SHA-384': '1.2.840.10045.4.3.3',
    'SHA-512': '1.2.840.10045.4.3.4',
  },
};

/**
 * The `signAlgo` OIDs that name a credential's scheme: the key's algorithm (with `hashAlgorithmOID`), the
 * scheme with a given hash, or RSASSA-PSS.
 */
export function signAlgoOids(credential: OneTimeCredential, digest?: DigestAlgorithm): string[] {
  const family = KEY_TYPE_SPECS[credential.keyType].family;
  if (credential.signatureAlgorithm === 'RSASSA-PSS') return [RSASSA_PSS_OID];
  const withHash = WITH_HASH_OIDS[credential.signatureAlgorithm];
  return [
    KEY_ALGORITHM_OID[family],
    ...(digest ? [withHash[digest]] : DIGEST_ALGORITHMS.map((d) => withHash[d])),
  ];
}

/** Every `signAlgo` OID the service signs with (`info`'s `signAlgorithms.algos`). */
export function allSignAlgoOids(): string[] {
  return [...new Set(CSC_CREDENTIALS.flatMap((c) => signAlgoOids(c)))];
}

/** Checks that `signAlgo` names the credential's scheme (for this hash), or `invalid_request`. */
export function checkSignAlgo(
  credential: OneTimeCredential,
  signAlgo: unknown,
  digest: DigestAlgorithm,
): void {
  if (typeof signAlgo !== 'string' || !signAlgoOids(credential, digest).includes(signAlgo)) {
    throw new CscError('invalid_request', 'Invalid parameter signAlgo: not the scheme of this credential');
  }
}

/** A login's credential's certificate as credentials/info shows it (CSC v2 11.5 `cert`). */
export interface CredentialCertificate {
  /** Base64 DER, the signer's first, as asked (`single`: the signer's only). */
  readonly certificates: readonly string[];
  /** Issuer and subject DN (RFC 4514), serial (hex), validity (GeneralizedTime). */
  readonly info: {
    readonly issuerDN: string;
    readonly serialNumber: string;
    readonly subjectDN: string;
    readonly validFrom: string;
    readonly validTo: string;
  };
}

/** The credentials/info answer for a one-time credential (CSC v2 11.5). */
export function credentialInfo(
  credential: OneTimeCredential,
  lang = 'en-US',
  certificate?: CredentialCertificate,
): Record<string, unknown> {
  const spec = KEY_TYPE_SPECS[credential.keyType];
  return {
    description: credential.credentialRequestId
      ? `Your one-time ${credential.keyType} key (${credential.signatureAlgorithm}), certified at your login, for one approved signature`
      : `One-time ${credential.keyType} key (${credential.signatureAlgorithm}), certified for the authenticated citizen and destroyed after use`,
    key: {
      status: 'enabled',
      algo: signAlgoOids(credential),
      len: spec.bits,
      ...(spec.curve ? { curve: CURVE_OID[spec.curve] } : {}),
    },
    // A type has no certificate: each use certifies a new key; a login's own credential has its own.
    cert: { status: 'valid', certificates: certificate?.certificates ?? [], ...(certificate?.info ?? {}) },
    // `objects` present (none for oauth2code): eudi-lib-jvm-rqes-csc-kt requires the key.
    auth: { mode: 'oauth2code', objects: [] },
    SCAL: '2',
    multisign: MAX_SIGNATURES_PER_AUTHORIZATION,
    lang,
  };
}

/**
 * Hashes one authorization may cover (CSC multisign): one sign request of the pipeline with its
 * documents, one login, one key and one certificate for all of them.
 */
export const MAX_SIGNATURES_PER_AUTHORIZATION = MAX_DOCUMENTS;

/** A hash as CSC sends it (base64 or base64url) in the pipeline's form (standard base64), length checked. */
export function digestOf(hash: unknown, algorithm: DigestAlgorithm, parameter: string): string {
  if (typeof hash !== 'string' || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(hash)) {
    throw new CscError('invalid_request', `Invalid parameter ${parameter}`);
  }
  const bytes = Buffer.from(hash.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (bytes.length !== DIGEST_LENGTH[algorithm]) {
    throw new CscError('invalid_request', `Invalid parameter ${parameter}: not a ${algorithm} hash`);
  }
  return bytes.toString('base64');
}
