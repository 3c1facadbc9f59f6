/**
 * Scheduled, outside the VPC (it is the one function with a route to the internet): copies the trusted
 * identity providers' signing keys (JWKS) into SSM parameters, where the API function, in isolated
 * subnets without egress, reads them. Fails the run (and so the Errors alarm) when an issuer could not
 * be refreshed; its previous keys stay in place.
 */
import type { Context } from 'aws-lambda';
import { Logger } from '@aws-lambda-powertools/logger';
import { GetParameterCommand, ParameterNotFound, PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { fetchJson, refreshIssuerKeys, type KeyParameterStore } from '../../adapters/oidc/src';
import { loadAwsConfig, loadIdentityConfig } from '../../config/src';

const logger = new Logger({ serviceName: 'jwks-refresh' });
const aws = loadAwsConfig();
const ssm = new SSMClient({ region: aws.region, endpoint: aws.endpoints.ssm });

const store: KeyParameterStore = {
  get: async (name) => {
    try {
      return (await ssm.send(new GetParameterCommand({ Name: name }))).Parameter?.Value;
    } catch (err) {
      if (err instanceof ParameterNotFound) return undefined;
      throw err;
    }
  },
  put: async (name, value) => {
    await ssm.send(
      new PutParameterCommand({
        Name: name,
        Value: value,
        Overwrite: true,
        Type: 'String',
        Tier: 'Advanced',
      }),
    );
  },
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
