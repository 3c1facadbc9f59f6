/**
 * Fault injection for the local runner's resilience and load tests: when HSM_FAULT_RATE is set, the HSM
 * of this process (consumer or runner) fails chosen operations at that rate; when HSM_KEYGEN_LATENCY_MS
 * is, its key generations take as long as a network HSM's. Installed before the handlers load, through
 * the shared HSM's decorator seam; deployed functions never contain it.
 */
export async function installHsmFaults(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (!env.HSM_FAULT_RATE && !env.HSM_KEYGEN_LATENCY_MS) return;
  const [{ decorateSharedHsm }, { maybeWithFaults }] = await Promise.all([
    import('../../../lambdas/handlers/shared/hsm'),
    import('../faults/hsm-fault-injection'),
  ]);
  decorateSharedHsm((hsm) => maybeWithFaults(hsm, env));
}
