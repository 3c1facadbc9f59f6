import { ENV } from '@pipeline/config';
import { TABLES } from '@pipeline/resources';
import { cscSecretsOf, poolEnv, signQueueEnv, tableEnv, type FunctionSpec } from './spec';

/**
 * The CSC API v2 (docs/csc.md): its OAuth 2.0 authorization server and signatures/signHash. It submits
 * the sign request through the API's intake in its own process (`handleApiEvent`, as the local gateway
 * runs it), not over HTTP: it gets what that intake uses of the API function's access for
 * `POST /sign-requests` (the revocation function included, which registers the request id's owner), and
 * no API key and no execute-api:Invoke. signatures/timestamp invokes the TSA function, as the signer does.
 *
 * Outside the VPC: it exchanges the citizen's authorization code at the OpenID Provider (HTTPS, on the
 * internet), which the VPC's isolated subnets cannot reach, and it needs no HSM. Its tables, queue,
 * parameters and secrets are reached at the services' public endpoints (TLS, SigV4), as the JWKS
 * refresher does; a NAT gateway would give every function of the VPC a way out.
 */
export const csc: FunctionSpec = {
  name: 'csc',
  description:
    'CSC API v2: OAuth 2.0 authorization with the OpenID Provider, one-time credentials, signHash and signDoc through the API intake, timestamp',
  memorySize: 512,
  // signatures/signHash waits for the signature up to CSC_SIGN_WAIT_SECONDS (20 s at most); API
  // Gateway's integration timeout is 29 s.
  timeoutSeconds: 29,
  network: { kind: 'outside-vpc' },
  deployed: (settings) => settings.csc !== undefined,
  environment: (deps) => {
    const settings = deps.settings.csc!;
    const secrets = cscSecretsOf(deps);
    return {
      [ENV.CSC_BASE_URL]: settings.baseUrl,
      [ENV.CSC_IDP_ISSUER]: settings.idpIssuer,
      ...(settings.idpRedirectUri ? { [ENV.CSC_IDP_REDIRECT_URI]: settings.idpRedirectUri } : {}),
      [ENV.CSC_IDP_CLIENT_KEY]: `secretsmanager:${secrets.idpClientKey.secretArn}`,
      [ENV.CSC_CLIENTS]: `secretsmanager:${secrets.clients.secretArn}`,
      ...tableEnv(deps, 'csc'),
      // signatures/timestamp: the service's TSA, as the signer calls it.
      [ENV.TSA_FUNCTION_NAME]: deps.fn('tsa').functionArn,
      // The API's intake, as the api function has it (admission, identity checks, the request id's owner
      // registered with the revocation function, the queue).
      [ENV.REVOKE_FUNCTION_NAME]: deps.fn('revoke').functionArn,
      ...poolEnv(deps),
      ...deps.identity.environment(),
      ...signQueueEnv(deps),
      ...tableEnv(deps, 'requests', 'keyPool', 'demand', 'assertions'),
    };
  },
  grants: (grant) => {
    // Its OAuth 2.0 state: flows, codes, access tokens, pushed authorizations and asynchronous outcomes
    // (by their hashes), each put, read, taken or marked used once; no Query or Scan, and no other item.
    grant.tableItems(
      'csc',
      ['PutItem', 'GetItem', 'DeleteItem', 'UpdateItem'],
      ['FLOW#*', 'CODE#*', 'TOKEN#*', 'PAR#*', 'RESP#*'],
    );
    // signatures/timestamp (the unqualified ARN only: it calls it by that).
    grant.invoke('tsa');
    grant.readsCscSecrets();
    // The intake of POST /sign-requests: create, read (waiting) and discard its request; admission by the
    // pool counters and the open requests; one demand increment; the assertion's single use; the issuers'
    // keys; the queue (send only: the depth is the health check's, which it does not serve).
    grant.table('requests', 'PutItem', 'GetItem', 'DeleteItem', 'BatchGetItem');
    grant.queryIndex('requests', TABLES.requests.globalSecondaryIndexes[0].indexName);
    grant.table('keyPool', 'BatchGetItem');
    grant.table('demand', 'UpdateItem');
    grant.table('assertions', 'PutItem');
    grant.readsIdentityKeys();
    grant.tableKey();
    grant.sendsToQueue('sqs:SendMessage');
    // The intake registers each request id's owner (`csc:<client>`) with the revocation function first.
    grant.invoke('revoke');
  },
};
