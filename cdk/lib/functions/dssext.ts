import { ENV } from '@pipeline/config';
import { TABLES } from '@pipeline/resources';
import { dssExtEnv, dssExtSecretsOf, poolEnv, signQueueEnv, tableEnv, type FunctionSpec } from './spec';

/**
 * The DSS-Ext door (docs/dss-ext.md): an e-service's SignRequest, the citizen's login at a federation
 * identity provider (SAML, through the browser), the SignResponse. It submits the sign request through
 * the API's intake in its own process (`wireApi`), as the CSC function does: it gets what that intake
 * uses of the API function's access for `POST /sign-requests` (the revocation function included, which
 * registers the request id's owner), and no API key and no execute-api:Invoke.
 *
 * In the VPC, reaching the endpoints only (as the API function): unlike the CSC function it calls no
 * identity provider (the browser carries the SAML messages) and reads the federation's metadata from
 * Secrets Manager, so nothing it needs is on the internet.
 */
export const dssext: FunctionSpec = {
  name: 'dssext',
  description:
    'DSS-Ext door: SignRequests of the Swedish eID framework, the SAML login, signing through the API intake, SignResponses',
  memorySize: 512,
  // POST /saml/acs submits and waits for the signatures (acs.ts); API Gateway's integration timeout is 29 s.
  timeoutSeconds: 29,
  network: {
    kind: 'endpoints-only',
    securityGroupDescription: 'Signing pipeline DSS-Ext door function (no HSM access)',
  },
  deployed: (settings) => settings.dssExt !== undefined,
  environment: (deps) => ({
    ...dssExtEnv(deps),
    [ENV.DSSEXT_SERVICE_KEY]: `secretsmanager:${dssExtSecretsOf(deps).serviceKey.secretArn}`,
    ...tableEnv(deps, 'dssExt'),
    // The API's intake, as the api function has it (admission, identity checks, the request id's owner
    // registered with the revocation function, the queue).
    [ENV.REVOKE_FUNCTION_NAME]: deps.fn('revoke').functionArn,
    ...poolEnv(deps),
    ...deps.identity.environment(),
    ...signQueueEnv(deps),
    ...tableEnv(deps, 'requests', 'keyPool', 'demand', 'assertions'),
  }),
  grants: (grant) => {
    // Its state (DssExtRepository): each SignRequest's RequestID once (`REQ#`, a conditional put) and the
    // logins (`FLOW#`: put, read, answered once by a conditional update); no Query, Scan or Delete.
    grant.tableItems('dssExt', ['PutItem', 'GetItem', 'UpdateItem'], ['REQ#*', 'FLOW#*']);
    grant.readsDssExtServiceKey();
    grant.readsFederationMetadata();
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
    // The intake registers each request id's owner (`dss:<SignRequester>`) with the revocation function first.
    grant.invoke('revoke');
  },
};
