import { ENV } from '@pipeline/config';
import { CA_TIMEOUT_SECONDS } from './ca';
import { loginEnv, tableEnv, type FunctionSpec } from './spec';

/**
 * Revocation apart from issuance: another function, another caller (the API and operators), no CA key. It
 * logs in as its own crypto user, which holds only a share of the audit key: the heads of the audit
 * entries it appends are signed.
 */
export const revoke: FunctionSpec = {
  name: 'revoke',
  description: 'Revokes certificates (API and operators only) and starts the CRL publication',
  memorySize: 256,
  timeoutSeconds: CA_TIMEOUT_SECONDS,
  network: { kind: 'hsm', cryptoUser: 'revoke' },
  environment: (deps) => ({
    ...loginEnv(deps, 'revoke'),
    [ENV.CRL_FUNCTION_NAME]: deps.fn('crl').functionArn,
    ...tableEnv(deps, 'certificates', 'audit'),
  }),
  grants: (grant) => {
    // One conditional update of a serial's record, the statuses it reports; for a client, the request's
    // certificate and owner it reads, and the owner it registers for the API.
    grant.tableItems('certificates', ['UpdateItem'], ['SERIAL#*']);
    grant.tableItems('certificates', ['BatchGetItem'], ['SERIAL#*', 'REQ#*', 'OWNER#*']);
    grant.tableItems('certificates', ['PutItem'], ['OWNER#*']);
    grant.appendsAudit();
    grant.tableKey();
    grant.login();
    // After a revocation it starts the publication (asynchronous invoke).
    grant.invoke('crl');
  },
};
