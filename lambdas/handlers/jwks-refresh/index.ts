/**
 * Scheduled, outside the VPC (it is the one function with a route to the internet): copies the trusted
 * identity providers' signing keys (JWKS) into SSM parameters, where the API function, in isolated
 * subnets without egress, reads them. Fails the run (and so the Errors alarm) when an issuer could not
 * be refreshed; its previous keys stay in place.
 */
import type { Context } from 'aws-lambda';
import { Logger } from '@aws-lambda-powertools/logger';
import { fetchJson, refreshIssuerKeys, type KeyParameterStore } from '@pipeline/adapters/oidc';
import { SsmParameterStore } from '@pipeline/adapters/parameters';
import { loadAwsConfig, loadIdentityConfig } from '@pipeline/config';

const logger = new Logger({ serviceName: 'jwks-refresh' });
const parameters = SsmParameterStore.create(loadAwsConfig());

const store: KeyParameterStore = {
  get: (name) => parameters.get(name),
  // Advanced tier: a key set with several RSA keys can outgrow the Standard tier's 4 kB.
  put: (name, value) => parameters.put(name, value, 'Advanced'),
};

export async function handler(
  _event?: unknown,
  context?: Context,
): Promise<{ updated: number; unchanged: number }> {
  // Every log line of the invocation carries the Lambda context (function, request id, cold start).
  if (context) logger.addContext(context);
  const result = await refreshIssuerKeys(loadIdentityConfig().issuers, { fetchJson, store });
  for (const failure of result.failed) logger.error('issuer keys not refreshed', failure);
  logger.info('issuer keys refreshed', { updated: result.updated, unchanged: result.unchanged });
  if (result.failed.length > 0) {
    throw new Error(`${result.failed.length} issuer(s) could not be refreshed; their previous keys stay`);
  }
  return { updated: result.updated, unchanged: result.unchanged };
}
