/**
 * CA hierarchy bootstrap against the configured HSM (SoftHSM locally, a CloudHSM cluster from a host with
 * the Client SDK). Idempotent. Three steps, each logged in as one crypto user (an HSM logs a process in as
 * one user at a time):
 *
 *   tsx scripts/ca-bootstrap.ts ocsp-key <pem out>   as the OCSP responder user (OCSP_HSM_PIN_SOURCE): its
 *                                                    key pair (token object, non-extractable), the public
 *                                                    key written to <pem out>
 *   tsx scripts/ca-bootstrap.ts tsa-key <pem out>    the same as the time-stamping authority's user
 *                                                    (TSA_HSM_PIN_SOURCE): the TSA key pair
 *   tsx scripts/ca-bootstrap.ts [--ocsp-public-key <pem>] [--tsa-public-key <pem>]
 *                                                    as the CA user (CA_HSM_PIN_SOURCE): root and issuing
 *                                                    CA key pairs, the certificates (the OCSP responder's
 *                                                    and the TSA's for the given public keys; without one,
 *                                                    the key of a stored certificate, else one the CA user
 *                                                    makes, where an HSM cannot separate the users)
 *                                                    stored where CA_CERTS_SOURCE says
 */
import { createPublicKey } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { connectHsm } from '@pipeline/adapters/hsm';
import { caCertificateStore } from '@pipeline/adapters/parameters';
import { bootstrapCaHierarchy, findCaKey } from '@pipeline/ca';
import { loadCaConfig, loadConfig } from '@pipeline/config';

/** A delegated service's key, made by the service's own crypto user: the OCSP responder or the TSA. */
async function serviceKey(service: 'ocsp' | 'tsa', out: string): Promise<void> {
  const config = loadConfig(process.env);
  const ca = loadCaConfig(process.env);
  const { pinSource, tokenLabel, keyLabel, keyType, name } =
    service === 'ocsp'
      ? {
          pinSource: ca.ocspPinSource,
          tokenLabel: ca.ocspTokenLabel,
          keyLabel: ca.ocspKeyLabel,
          keyType: ca.ocspKeyType,
          name: 'OCSP responder',
        }
      : {
          pinSource: ca.tsaPinSource,
          tokenLabel: ca.tsaTokenLabel,
          keyLabel: ca.tsaKeyLabel,
          keyType: ca.tsaKeyType,
          name: 'time-stamping authority',
        };
  const hsm = await connectHsm({ ...config.hsm, pinSource, tokenLabel, sessionPoolSize: 1 }, config.aws);
  try {
    let key = await findCaKey(hsm, keyLabel, keyType);
    if (!key) {
      const pair = await hsm.generateKeyPair(keyType, { extractable: false, tokenLabel: keyLabel });
      key = { ref: pair.privateKey, spki: pair.publicKeySpki };
      console.error(`[ca-bootstrap] generated key pair ${keyLabel} (${keyType})`);
    }
    writeFileSync(
      out,
      createPublicKey({ key: key.spki, format: 'der', type: 'spki' }).export({ type: 'spki', format: 'pem' }),
    );
    console.error(`[ca-bootstrap] ${name} public key in ${out}`);
  } finally {
    await hsm.close();
  }
}

const spkiOf = (file: string | undefined): Buffer | undefined =>
  file ? createPublicKey(readFileSync(file, 'utf8')).export({ type: 'spki', format: 'der' }) : undefined;

async function hierarchy(ocspPublicKeyFile?: string, tsaPublicKeyFile?: string): Promise<void> {
  const config = loadConfig(process.env);
  const ca = loadCaConfig(process.env);
  const ocspPublicKeySpki = spkiOf(ocspPublicKeyFile);
  const tsaPublicKeySpki = spkiOf(tsaPublicKeyFile);
  const hsm = await connectHsm({ ...config.hsm, pinSource: ca.pinSource, sessionPoolSize: 1 }, config.aws);
  try {
    const store = caCertificateStore(ca.certsSource, config.aws);
    const { changes } = await bootstrapCaHierarchy(hsm, ca, store, { ocspPublicKeySpki, tsaPublicKeySpki });
    console.error(
      changes.length > 0
        ? changes.map((c) => `[ca-bootstrap] ${c}`).join('\n')
        : `[ca-bootstrap] CA hierarchy in place (${ca.keyType}, certificates in ${store.location})`,
    );
  } finally {
    await hsm.close();
  }
}

async function main(argv: readonly string[]): Promise<void> {
  if (argv[0] === 'ocsp-key' || argv[0] === 'tsa-key') {
    if (!argv[1]) throw new Error(`usage: tsx scripts/ca-bootstrap.ts ${argv[0]} <pem out>`);
    return serviceKey(argv[0] === 'ocsp-key' ? 'ocsp' : 'tsa', argv[1]);
  }
  const value = (flag: string): string | undefined => {
    const at = argv.indexOf(flag);
    if (at < 0) return undefined;
    if (!argv[at + 1]) throw new Error(`${flag} needs a PEM file`);
    return argv[at + 1];
  };
  return hierarchy(value('--ocsp-public-key'), value('--tsa-public-key'));
}

main(process.argv.slice(2)).catch((err: Error) => {
  // Name and message only: HSM and configuration errors are built without PINs or personal data.
  console.error(`[ca-bootstrap] failed: ${err.name}: ${err.message}`);
  process.exit(1);
});
