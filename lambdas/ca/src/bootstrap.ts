import { X509Certificate } from 'node:crypto';
import { AsnConvert } from '@peculiar/asn1-schema';
import { Certificate, type Extension } from '@peculiar/asn1-x509';
import { pkiUrls, type CaConfig } from '@pipeline/config';
import type { KeyType, Hsm } from '@pipeline/core/shared';
import {
  caExtensions,
  encodeName,
  keyIdentifier,
  ocspSignerExtensions,
  parseCertificate,
  tsaExtensions,
  pem,
  pemToDer,
  randomSerial,
  signCertificate,
  type ParsedCertificate,
} from '@pipeline/der';
import { findCaKey, hsmSigner, parseCaChain, type CaKey } from './ca-keys';
import { CaNotReadyError } from './errors';
import type { CaCertificateStore } from '@pipeline/core/pki';

const DAY_MS = 86_400_000;
/** Certificates start a minute early so relying parties with a slightly slow clock accept them. */
export const BACKDATE_MS = 60_000;

export type CaBootstrapConfig = Pick<
  CaConfig,
  | 'keyType'
  | 'rootKeyLabel'
  | 'issuingKeyLabel'
  | 'organization'
  | 'country'
  | 'rootValidityDays'
  | 'issuingValidityDays'
  | 'policyOid'
  | 'pkiBaseUrl'
  | 'ocspKeyLabel'
  | 'ocspKeyType'
  | 'ocspValidityDays'
  | 'tsaKeyLabel'
  | 'tsaKeyType'
  | 'tsaValidityDays'
>;

/** What a bootstrap run changed; empty when everything was already in place. */
export interface CaBootstrapResult {
  readonly changes: readonly string[];
}

async function ensureKey(
  hsm: Hsm,
  label: string,
  keyType: KeyType,
  changes: string[],
  create: boolean,
): Promise<CaKey> {
  const found = await findCaKey(hsm, label, keyType);
  if (found) return found;
  if (!create) throw new CaNotReadyError(`the key ${label} is not on the token: run the CA bootstrap`);
  // Token objects, sensitive and never extractable: the CA keys exist only inside the HSM.
  const pair = await hsm.generateKeyPair(keyType, { extractable: false, tokenLabel: label });
  changes.push(`generated key pair ${label} (${keyType})`);
  return { ref: pair.privateKey, spki: pair.publicKeySpki };
}

/** When a delegated certificate is renewed: with a third of its validity left. */
function renewAt(certificatePem: string): number {
  const certificate = new X509Certificate(certificatePem);
  const from = Date.parse(certificate.validFrom);
  const to = Date.parse(certificate.validTo);
  return to - (to - from) / 3;
}

function name(config: CaBootstrapConfig, commonName: string) {
  return encodeName([
    { oid: '2.5.4.6', kind: 'printableString', value: config.country },
    { oid: '2.5.4.10', kind: 'utf8String', value: config.organization },
    { oid: '2.5.4.3', kind: 'utf8String', value: `${config.organization} ${commonName}` },
  ]);
}

/** The certificate's extensions are exactly `expected` (same DER, any order): its profile is current. */
function hasExtensions(certificatePem: string, expected: readonly Extension[]): boolean {
  const actual = AsnConvert.parse(pemToDer(certificatePem), Certificate).tbsCertificate.extensions ?? [];
  const encode = (list: readonly Extension[]): string[] =>
    list.map((e) => Buffer.from(AsnConvert.serialize(e)).toString('hex')).sort();
  return JSON.stringify(encode(actual)) === JSON.stringify(encode(expected));
}

/** True when `pem` is intact, issued by `issuerPem`'s key, and certifies exactly `spki`. */
function certifies(issuerPem: string, pem: string, spki: Buffer): boolean {
  try {
    const certificate = new X509Certificate(pem);
    return (
      certificate.verify(new X509Certificate(issuerPem).publicKey) &&
      parseCertificate(certificate.raw).subjectPublicKeySpki.equals(spki)
    );
  } catch {
    return false;
  }
}

/**
 * Idempotent CA hierarchy set-up: root and issuing CA key pairs on the token (generated if missing), and
 * the OCSP responder's key pair in `ocspHsm` (the responder's own login: another token or crypto user, so
 * the responder never reaches the CA keys), or the responder's public key `ocspPublicKeySpki` (made by its
 * own user beforehand); a self-signed root certificate, an issuing CA certificate signed by the root, and
 * the delegated OCSP responder's certificate signed by the issuing CA, stored as PEM. Without either, the
 * responder's public key is the one its stored certificate names (the scheduled maintenance renews that
 * certificate without touching the responder's key), or, when there is none yet, a key on the CA's own
 * token (an HSM that cannot separate them). A stored certificate is kept
 * while it still certifies its key under the current profile (the root, a trust anchor, only while it
 * certifies its key); otherwise it is issued again: the issuing CA's when its policy or pointers changed,
 * the OCSP responder's and the time-stamping authority's (signed by the root, its key on its own login like
 * the responder's) also when less than a third of its validity is left. With createKeys false (the
 * scheduled maintenance), a missing key is an error, never a new key.
 */
export async function bootstrapCaHierarchy(
  hsm: Hsm,
  config: CaBootstrapConfig,
  store: CaCertificateStore,
  options: {
    readonly now?: number;
    readonly createKeys?: boolean;
    readonly ocspHsm?: Hsm;
    readonly ocspPublicKeySpki?: Buffer;
    /** The TSA's login and public key, as for the OCSP responder. */
    readonly tsaHsm?: Hsm;
    readonly tsaPublicKeySpki?: Buffer;
  } = {},
): Promise<CaBootstrapResult> {
  const now = options.now ?? Date.now();
  const create = options.createKeys ?? true;
  const run: BootstrapRun = { hsm, config, now, notBefore: new Date(now - BACKDATE_MS), changes: [] };
  const rootKey = await ensureKey(hsm, config.rootKeyLabel, config.keyType, run.changes, create);
  const issuingKey = await ensureKey(hsm, config.issuingKeyLabel, config.keyType, run.changes, create);
  const stored = await store.readEach();
  const ocspSpki = await delegatedKey(run, create, {
    stored: stored.ocspPem,
    spki: options.ocspPublicKeySpki,
    hsm: options.ocspHsm,
    label: config.ocspKeyLabel,
    keyType: config.ocspKeyType,
  });
  const tsaSpki = await delegatedKey(run, create, {
    stored: stored.tsaPem,
    spki: options.tsaPublicKeySpki,
    hsm: options.tsaHsm,
    label: config.tsaKeyLabel,
    keyType: config.tsaKeyType,
  });
  const urls = pkiUrls(config.pkiBaseUrl);

  const rootPem = await rootCertificate(run, stored.rootPem, rootKey);
  const root = parseCaChain({ rootPem, issuingPem: rootPem }).root;
  const issuingPem = await issuingCertificate(run, stored.issuingPem, {
    spki: issuingKey.spki,
    extensions: caExtensions({
      subjectPublicKeySpki: issuingKey.spki,
      issuerKeyIdentifier: root.keyIdentifier,
      pathLength: 0,
      subordinate: { policyOid: config.policyOid, crlUrl: urls.rootCrl, caIssuersUrl: urls.rootCertificate },
    }),
    rootPem,
    root,
    rootKey,
  });
  const issuing: ParsedCertificate = parseCaChain({ rootPem, issuingPem }).issuing;

  const ocspPem = await delegatedCertificate(run, {
    stored: stored.ocspPem,
    what: 'OCSP responder',
    commonName: 'OCSP Responder',
    spki: ocspSpki,
    extensions: ocspSignerExtensions({
      subjectPublicKeySpki: ocspSpki,
      issuerKeyIdentifier: issuing.keyIdentifier,
    }),
    validityDays: config.ocspValidityDays,
    issuerPem: issuingPem,
    issuer: issuing,
    issuerKey: issuingKey,
  });
  const tsaPem = await delegatedCertificate(run, {
    stored: stored.tsaPem,
    what: 'time-stamping authority',
    commonName: 'Time-Stamping Authority',
    spki: tsaSpki,
    extensions: tsaExtensions({
      subjectPublicKeySpki: tsaSpki,
      issuerKeyIdentifier: root.keyIdentifier,
      crlUrl: urls.rootCrl,
      caIssuersUrl: urls.rootCertificate,
    }),
    validityDays: config.tsaValidityDays,
    issuerPem: rootPem,
    issuer: root,
    issuerKey: rootKey,
  });

  if (
    rootPem !== stored.rootPem ||
    issuingPem !== stored.issuingPem ||
    ocspPem !== stored.ocspPem ||
    tsaPem !== stored.tsaPem
  ) {
    await store.write({ rootPem, issuingPem, ocspPem, tsaPem });
    run.changes.push(`stored the CA certificates in ${store.location}`);
  }
  return { changes: run.changes };
}

/** What the certificates of one bootstrap run share; `changes` collects what the run did. */
interface BootstrapRun {
  readonly hsm: Hsm;
  readonly config: CaBootstrapConfig;
  readonly now: number;
  readonly notBefore: Date;
  readonly changes: string[];
}

/**
 * A delegated signer's (OCSP responder's, TSA's) public key: the one given, else its key pair on its own
 * login (or, without one and with no stored certificate, on the CA's token), else the key its stored
 * certificate names.
 */
async function delegatedKey(
  run: BootstrapRun,
  create: boolean,
  signer: {
    readonly stored: string | undefined;
    readonly spki: Buffer | undefined;
    readonly hsm: Hsm | undefined;
    readonly label: string;
    readonly keyType: KeyType;
  },
): Promise<Buffer> {
  if (signer.spki) return signer.spki;
  if (signer.hsm || !signer.stored) {
    return (await ensureKey(signer.hsm ?? run.hsm, signer.label, signer.keyType, run.changes, create)).spki;
  }
  return parseCertificate(pemToDer(signer.stored)).subjectPublicKeySpki;
}

/** The self-signed root certificate: the stored one while it certifies the root key, else a new one. */
async function rootCertificate(
  run: BootstrapRun,
  stored: string | undefined,
  rootKey: CaKey,
): Promise<string> {
  if (stored && certifies(stored, stored, rootKey.spki)) return stored;
  const rootName = name(run.config, 'Root CA');
  const der = await signCertificate(
    {
      serial: randomSerial(),
      subject: rootName,
      subjectPublicKeySpki: rootKey.spki,
      notBefore: run.notBefore,
      notAfter: new Date(run.notBefore.getTime() + run.config.rootValidityDays * DAY_MS),
      extensions: caExtensions({ subjectPublicKeySpki: rootKey.spki }),
    },
    {
      name: rootName,
      keyType: run.config.keyType,
      keyIdentifier: keyIdentifier(rootKey.spki),
      sign: (digest, options) => run.hsm.signDigest(rootKey.ref, digest, options),
    },
  );
  run.changes.push('issued the root CA certificate');
  return pem('CERTIFICATE', der);
}

/**
 * The issuing CA certificate, signed by the root: the stored one while it certifies the issuing key under
 * the current profile (`extensions`: policy and pointers), else a new one.
 */
async function issuingCertificate(
  run: BootstrapRun,
  stored: string | undefined,
  issuing: {
    readonly spki: Buffer;
    readonly extensions: Extension[];
    readonly rootPem: string;
    readonly root: ParsedCertificate;
    readonly rootKey: CaKey;
  },
): Promise<string> {
  if (
    stored &&
    certifies(issuing.rootPem, stored, issuing.spki) &&
    hasExtensions(stored, issuing.extensions)
  ) {
    return stored;
  }
  const der = await signCertificate(
    {
      serial: randomSerial(),
      subject: name(run.config, 'Issuing CA'),
      subjectPublicKeySpki: issuing.spki,
      notBefore: run.notBefore,
      notAfter: new Date(
        Math.min(
          run.notBefore.getTime() + run.config.issuingValidityDays * DAY_MS,
          issuing.root.notAfter.getTime(),
        ),
      ),
      extensions: issuing.extensions,
    },
    hsmSigner(run.hsm, issuing.rootKey, issuing.root, run.config.keyType),
  );
  run.changes.push('issued the issuing CA certificate');
  return pem('CERTIFICATE', der);
}

/**
 * A delegated certificate (OCSP responder, TSA): the stored one while it certifies its key under the
 * current profile with more than a third of its validity left, otherwise issued again.
 */
async function delegatedCertificate(
  run: BootstrapRun,
  spec: {
    readonly stored: string | undefined;
    readonly what: string;
    readonly commonName: string;
    readonly spki: Buffer;
    readonly extensions: Extension[];
    readonly validityDays: number;
    readonly issuerPem: string;
    readonly issuer: ParsedCertificate;
    readonly issuerKey: CaKey;
  },
): Promise<string> {
  if (
    spec.stored &&
    certifies(spec.issuerPem, spec.stored, spec.spki) &&
    hasExtensions(spec.stored, spec.extensions) &&
    run.now < renewAt(spec.stored)
  ) {
    return spec.stored;
  }
  const der = await signCertificate(
    {
      serial: randomSerial(),
      subject: name(run.config, spec.commonName),
      subjectPublicKeySpki: spec.spki,
      notBefore: run.notBefore,
      notAfter: new Date(
        Math.min(run.notBefore.getTime() + spec.validityDays * DAY_MS, spec.issuer.notAfter.getTime()),
      ),
      extensions: spec.extensions,
    },
    hsmSigner(run.hsm, spec.issuerKey, spec.issuer, run.config.keyType),
  );
  run.changes.push(`issued the ${spec.what} certificate`);
  return pem('CERTIFICATE', der);
}
