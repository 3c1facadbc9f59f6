/**
 * Fault injection for the local runner's resilience tests: when HSM_FAULT_RATE is set, the HSM of this
 * process (consumer or runner) fails chosen operations at that rate. Installed before the handlers load,
 * through the shared HSM's decorator seam; deployed functions never contain it.
 */
export async function installHsmFaults(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (!env.HSM_FAULT_RATE) return;
  const [{ decorateSharedHsm }, { maybeWithFaults }] = await Promise.all([
    import('../../../lambdas/handlers/shared/hsm'),
    import('../../../lambdas/test-support/hsm-fault-injection'),
  ]);
  decorateSharedHsm((hsm) => maybeWithFaults(hsm, env));
}
