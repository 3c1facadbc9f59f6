import { SCHEDULES } from '@pipeline/resources';
import type { FunctionSpec } from './spec';

/**
 * The only function outside the VPC: it fetches the identity providers' keys from the internet and writes
 * them to SSM; it reaches no table, queue or HSM.
 */
export const jwksRefresh: FunctionSpec = {
  name: 'jwks-refresh',
  description: "Scheduled: copies the trusted identity providers' signing keys (JWKS) into SSM parameters",
  memorySize: 256,
  schedule: SCHEDULES.jwksRefresh,
  network: { kind: 'outside-vpc' },
  environment: (deps) => deps.identity.environment(),
  grants: (grant) => {
    // It reads a parameter to write it only when the keys changed.
    for (const parameter of grant.deps.identity.parameters) {
      parameter.grantRead(grant.fn);
      parameter.grantWrite(grant.fn);
    }
  },
};
