/**
 * Fault injection for the local runner's resilience and load tests: when HSM_FAULT_RATE is set, the HSM
 * of this process (consumer or runner) fails chosen operations at that rate; when HSM_KEYGEN_LATENCY_MS
 * (HSM_SIGN_LATENCY_MS) is, its key generations (signatures) take as long as a network HSM's. Installed before the pool user's HSM is first
 * used, through the shared HSM's decorator seam; deployed functions never contain it.
 */
import { decorateSharedHsm } from '../../../lambdas/handlers';
import { maybeWithFaults } from './hsm-fault-injection';

export function installHsmFaults(env: NodeJS.ProcessEnv = process.env): void {
  if (!env.HSM_FAULT_RATE && !env.HSM_KEYGEN_LATENCY_MS && !env.HSM_SIGN_LATENCY_MS) return;
  decorateSharedHsm((hsm) => maybeWithFaults(hsm, env));
}
