import type { Hsm } from '../../adapters/hsm/src';
import type { CaConfig } from '../../config/src';
import type { KeyType } from '../../core/src';
import { caExtensions, encodeName, keyIdentifier, pem, randomSerial, signCertificate } from '../../pki/src';
import { findCaKey, hsmSigner, parseCaChain, type CaKey } from './ca-keys';
import type { CaCertificateStore } from './types';

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
>;

/** What a bootstrap run changed; empty when everything was already in place. */
export interface CaBootstrapResult {
  readonly changes: readonly string[];
}

async function ensureKey(hsm: Hsm, label: string, keyType: KeyType, changes: string[]): Promise<CaKey> {
  const found = await findCaKey(hsm, label, keyType);
  if (found) return found;
  // Token objects, sensitive and never extractable: the CA keys exist only inside the HSM.
  const pair = await hsm.generateKeyPair(keyType, { extractable: false, tokenLabel: label });
  changes.push(`generated CA key pair ${label} (${keyType})`);
  return { ref: pair.privateKey, spki: pair.publicKeySpki };
}

function caName(config: CaBootstrapConfig, role: 'Root' | 'Issuing') {
  return encodeName([
    { oid: '2.5.4.6', kind: 'printableString', value: config.country },
    { oid: '2.5.4.10', kind: 'utf8String', value: config.organization },
    { oid: '2.5.4.3', kind: 'utf8String', value: `${config.organization} ${role} CA` },
  ]);
}

/** True when `pem` is intact, chains to the root, and certifies exactly `spki`. */
function certifies(rootPem: string, pem: string, spki: Buffer): boolean {
  try {
    return parseCaChain({ rootPem, issuingPem: pem }).issuing.subjectPublicKeySpki.equals(spki);
  } catch {
    return false;
  }
}

/**
 * Idempotent CA hierarchy set-up: root and issuing CA key pairs on the token (generated if missing), a
 * self-signed root certificate and an issuing CA certificate signed by the root, stored as PEM. Stored
 * certificates that still match the keys are kept (the root is a trust anchor: it is only re-made when
 * its key changed); otherwise the missing or stale ones are issued again.
 */
export async function bootstrapCaHierarchy(
  hsm: Hsm,
  config: CaBootstrapConfig,
  store: CaCertificateStore,
  now: number = Date.now(),
): Promise<CaBootstrapResult> {
  const changes: string[] = [];
  const rootKey = await ensureKey(hsm, config.rootKeyLabel, config.keyType, changes);
  const issuingKey = await ensureKey(hsm, config.issuingKeyLabel, config.keyType, changes);

  const stored = await store.readEach();
  let rootPem =
    stored.rootPem && certifies(stored.rootPem, stored.rootPem, rootKey.spki) ? stored.rootPem : undefined;
  if (rootPem && stored.issuingPem && certifies(rootPem, stored.issuingPem, issuingKey.spki)) {
    return { changes };
  }

  const notBefore = new Date(now - BACKDATE_MS);
  let root = rootPem ? parseCaChain({ rootPem, issuingPem: rootPem }).root : undefined;
  if (!root || !rootPem) {
    const name = caName(config, 'Root');
    const der = await signCertificate(
      {
        serial: randomSerial(),
        subject: name,
        subjectPublicKeySpki: rootKey.spki,
        notBefore,
        notAfter: new Date(notBefore.getTime() + config.rootValidityDays * DAY_MS),
        extensions: caExtensions({ subjectPublicKeySpki: rootKey.spki }),
      },
      {
        name,
        keyType: config.keyType,
        keyIdentifier: keyIdentifier(rootKey.spki),
        sign: (digest, options) => hsm.signDigest(rootKey.ref, digest, options),
      },
    );
    rootPem = pem('CERTIFICATE', der);
    root = parseCaChain({ rootPem, issuingPem: rootPem }).root;
    changes.push('issued the root CA certificate');
  }

  const issuingNotAfter = Math.min(
    notBefore.getTime() + config.issuingValidityDays * DAY_MS,
    root.notAfter.getTime(),
  );
  const issuingDer = await signCertificate(
    {
      serial: randomSerial(),
      subject: caName(config, 'Issuing'),
      subjectPublicKeySpki: issuingKey.spki,
      notBefore,
      notAfter: new Date(issuingNotAfter),
      extensions: caExtensions({
        subjectPublicKeySpki: issuingKey.spki,
        issuerKeyIdentifier: root.keyIdentifier,
        pathLength: 0,
      }),
    },
    hsmSigner(hsm, rootKey, root, config.keyType),
  );
  changes.push('issued the issuing CA certificate');
  await store.write({ rootPem, issuingPem: pem('CERTIFICATE', issuingDer) });
  changes.push(`stored the CA certificates in ${store.location}`);
  return { changes };
}
