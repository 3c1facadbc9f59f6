/**
 * Scheduled, outside the VPC (it is the one function with a route to the internet): copies the trusted
 * identity providers' signing keys (JWKS) into SSM parameters, where the API function, in isolated
 * subnets without egress, reads them. Fails the run (and so the Errors alarm) when an issuer could not
 * be refreshed; its previous keys stay in place.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { fetchJson, refreshIssuerKeys, type KeyParameterStore } from '@pipeline/adapters/oidc';
import { SsmParameterStore } from '@pipeline/adapters/parameters';
import type { JwksRefreshFunctionConfig, TrustedIssuer } from '@pipeline/config';
import { createLogger } from '../shared/observability';
import { lambdaHandler, type LambdaHandler } from '../shared/middleware';

export interface JwksRefreshDeps {
  readonly issuers: readonly TrustedIssuer[];
  readonly store: KeyParameterStore;
  readonly logger: Logger;
}

export interface JwksRefreshResult {
  readonly updated: number;
  readonly unchanged: number;
}

export function createJwksRefreshHandler({
  issuers,
  store,
  logger,
}: JwksRefreshDeps): LambdaHandler<unknown, JwksRefreshResult> {
  return lambdaHandler(
    async () => {
      const result = await refreshIssuerKeys(issuers, { fetchJson, store });
      for (const failure of result.failed) logger.error('issuer keys not refreshed', failure);
      logger.info('issuer keys refreshed', { updated: result.updated, unchanged: result.unchanged });
      if (result.failed.length > 0) {
        throw new Error(`${result.failed.length} issuer(s) could not be refreshed; their previous keys stay`);
      }
      return { updated: result.updated, unchanged: result.unchanged };
    },
    { logger },
  );
}

/** The refresh's dependencies from configuration: the trusted issuers and the SSM parameters. */
export function wireJwksRefresh(config: JwksRefreshFunctionConfig): JwksRefreshDeps {
  const parameters = SsmParameterStore.create(config.app.aws);
  return {
    issuers: config.identity.issuers,
    store: {
      get: (name) => parameters.get(name),
      // Advanced tier: a key set with several RSA keys can outgrow the Standard tier's 4 kB.
      put: (name, value) => parameters.put(name, value, 'Advanced'),
    },
    logger: createLogger('jwks-refresh'),
  };
}
