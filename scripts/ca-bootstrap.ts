/**
 * CA hierarchy bootstrap against the configured HSM (SoftHSM locally, a CloudHSM cluster from a host with
 * the Client SDK). Idempotent. Two steps, each logged in as one crypto user (an HSM logs a process in as
 * one user at a time):
 *
 *   tsx scripts/ca-bootstrap.ts ocsp-key <pem out>   as the OCSP responder user (OCSP_HSM_PIN_SOURCE): its
 *                                                    key pair (token object, non-extractable), the public
 *                                                    key written to <pem out>
 *   tsx scripts/ca-bootstrap.ts [--ocsp-public-key <pem>]
 *                                                    as the CA user (CA_HSM_PIN_SOURCE): root and issuing
 *                                                    CA key pairs, the certificates (the OCSP responder's
 *                                                    for the given public key, or the one it certifies
 *                                                    now) stored where CA_CERTS_SOURCE says
 */
import { createPublicKey } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { connectHsm } from '@pipeline/adapters/hsm';
import { bootstrapCaHierarchy, caCertificateStore, findCaKey } from '@pipeline/ca';
import { loadCaConfig, loadConfig } from '@pipeline/config';

async function ocspKey(out: string): Promise<void> {
  const config = loadConfig();
  const ca = loadCaConfig();
  const hsm = await connectHsm(
    { ...config.hsm, pinSource: ca.ocspPinSource, tokenLabel: ca.ocspTokenLabel, sessionPoolSize: 1 },
    config.aws,
  );
  try {
    let key = await findCaKey(hsm, ca.ocspKeyLabel, ca.ocspKeyType);
    if (!key) {
      const pair = await hsm.generateKeyPair(ca.ocspKeyType, {
        extractable: false,
        tokenLabel: ca.ocspKeyLabel,
      });
      key = { ref: pair.privateKey, spki: pair.publicKeySpki };
      console.error(`[ca-bootstrap] generated key pair ${ca.ocspKeyLabel} (${ca.ocspKeyType})`);
    }
    writeFileSync(
      out,
      createPublicKey({ key: key.spki, format: 'der', type: 'spki' }).export({ type: 'spki', format: 'pem' }),
    );
    console.error(`[ca-bootstrap] OCSP responder public key in ${out}`);
  } finally {
    await hsm.close();
  }
}

async function hierarchy(ocspPublicKeyFile: string | undefined): Promise<void> {
  const config = loadConfig();
  const ca = loadCaConfig();
  const ocspPublicKeySpki = ocspPublicKeyFile
    ? createPublicKey(readFileSync(ocspPublicKeyFile, 'utf8')).export({ type: 'spki', format: 'der' })
    : undefined;
  const hsm = await connectHsm({ ...config.hsm, pinSource: ca.pinSource, sessionPoolSize: 1 }, config.aws);
  try {
    const store = caCertificateStore(ca.certsSource, config.aws);
    const { changes } = await bootstrapCaHierarchy(hsm, ca, store, { ocspPublicKeySpki });
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
  if (argv[0] === 'ocsp-key') {
    if (!argv[1]) throw new Error('usage: tsx scripts/ca-bootstrap.ts ocsp-key <pem out>');
    return ocspKey(argv[1]);
  }
  const flag = argv.indexOf('--ocsp-public-key');
  return hierarchy(flag >= 0 ? argv[flag + 1] : undefined);
}

main(process.argv.slice(2)).catch((err: Error) => {
  // Name and message only: HSM and configuration errors are built without PINs or personal data.
  console.error(`[ca-bootstrap] failed: ${err.name}: ${err.message}`);
  process.exit(1);
});
