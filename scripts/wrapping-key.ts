/**
 * Provisions the pool wrapping key HSM_WRAP_KEY_LABEL on the configured HSM: AES-256, non-extractable,
 * with the unwrap and wrap templates of the HSM profile. On CloudHSM it logs in as the crypto user of
 * HSM_PIN_SOURCE, who owns the new key; an admin then marks it trusted (docs/operations.md). On SoftHSM
 * the security officer makes it trusted itself (HSM_SO_PIN). Idempotent. `--check` only reports (as any
 * user the key is shared with) and never creates, destroys or changes a key; it exits 1 unless the key is
 * there and trusted. Usage: `tsx scripts/wrapping-key.ts [--check]`.
 */
import { provisionWrappingKey } from '@pipeline/adapters/hsm/provisioning';
import { loadConfig } from '@pipeline/config';
import { resolvePin } from '@pipeline/adapters/parameters';

async function main(): Promise<void> {
  const { hsm, aws } = loadConfig(process.env);
  const label = hsm.wrapKeyLabel;
  const inspectOnly = process.argv.includes('--check');
  const result = await provisionWrappingKey(
    {
      ...hsm,
      pin: await resolvePin(hsm.pinSource, aws),
      soPin: process.env.HSM_SO_PIN || undefined,
      inspectOnly,
    },
    label,
  );
  if (!result.present) {
    console.error(`[wrapping-key] ${label}: missing (or not shared with this user)`);
    process.exit(1);
  }
  const state = result.trusted
    ? 'trusted'
    : 'NOT trusted yet: an admin marks it (CloudHSM CLI key set-attribute --name trusted --value true)';
  console.error(
    `[wrapping-key] ${label}: ${result.change === 'none' ? 'in place' : result.change}, ${state}`,
  );
  if (inspectOnly && !result.trusted) process.exit(1);
}

main().catch((err: Error) => {
  // Name and message only: HSM and configuration errors are built without PINs.
  console.error(`[wrapping-key] failed: ${err.name}: ${err.message}`);
  process.exit(1);
});
