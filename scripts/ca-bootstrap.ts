/**
 * CA hierarchy bootstrap against the configured HSM (SoftHSM locally, a CloudHSM cluster from a host with
 * the Client SDK): root and issuing CA key pairs as token objects, certificates stored where
 * CA_CERTS_SOURCE says (file:<dir> or ssm:<prefix>). Idempotent. Logs in as the CA crypto user
 * (CA_HSM_PIN_SOURCE). Usage: `tsx scripts/ca-bootstrap.ts`.
 */
import { connectHsm } from '../lambdas/adapters/hsm/src';
import { bootstrapCaHierarchy, caCertificateStore } from '../lambdas/ca/src';
import { loadCaConfig, loadConfig } from '../lambdas/config/src';

async function main(): Promise<void> {
  const config = loadConfig();
  const ca = loadCaConfig();
  const hsm = await connectHsm({ ...config.hsm, pinSource: ca.pinSource, sessionPoolSize: 1 }, config.aws);
  try {
    const store = caCertificateStore(ca.certsSource, config.aws);
    const { changes } = await bootstrapCaHierarchy(hsm, ca, store);
    console.error(
      changes.length > 0
        ? changes.map((c) => `[ca-bootstrap] ${c}`).join('\n')
        : `[ca-bootstrap] CA hierarchy in place (${ca.keyType}, certificates in ${store.location})`,
    );
  } finally {
    await hsm.close();
  }
}

main().catch((err: Error) => {
  // Name and message only: HSM and configuration errors are built without PINs or personal data.
  console.error(`[ca-bootstrap] failed: ${err.name}: ${err.message}`);
  process.exit(1);
});
