import { ENV } from '@pipeline/config';
import { caCertsEnv, dssExtEnv, loginEnv, tableEnv, type FunctionSpec } from './spec';

/** The certificate table's items the CA writes (certificate-repository.ts): records and its registers. */
const CA_ITEM_KEYS = ['REQ#*', 'SERIAL#*', 'ASSERTION#*', 'PUBKEY#*'];

/** The CA answers inside the signer's batch: well under the signer's timeout, with room for a cold start. */
export const CA_TIMEOUT_SECONDS = 15;

/** Issuance, for the signer only: the CA's crypto user. */
export const ca: FunctionSpec = {
  name: 'ca',
  description:
    "Issues one-time certificates (signer only): verifies each request's identity assertion and the CSR itself",
  memorySize: 1024,
  timeoutSeconds: CA_TIMEOUT_SECONDS,
  network: { kind: 'hsm', cryptoUser: 'ca' },
  environment: (deps) => ({
    ...loginEnv(deps, 'ca'),
    ...caCertsEnv(deps),
    ...deps.identity.environment(),
    ...dssExtEnv(deps),
    ...tableEnv(deps, 'certificates', 'audit'),
  }),
  grants: (grant) => {
    // It verifies the identity assertions again (the API refused bad ones early).
    grant.readsIdentityKeys();
    // DSS-Ext evidence (the SignRequest, the assertion), where the door is deployed: it verifies it too.
    grant.readsFederationMetadata();
    // No request record (it decides on the evidence it verifies); read its certificates and registers
    // (one BatchGetItem), record a certificate, released to its attempt, with its register entries (a
    // transaction of puts): its own item kinds only, never a CRL number or anything else in the table. It
    // updates serials (a takeover's replacement revokes the serial it supersedes, `superseded`) and
    // requests' records (a one-time credential released to the one request a second login approved, only
    // while its serial is not revoked: a condition check).
    grant.table('certificates', 'GetItem', 'BatchGetItem');
    grant.tableItems('certificates', ['PutItem'], CA_ITEM_KEYS);
    grant.tableItems('certificates', ['UpdateItem'], ['SERIAL#*', 'REQ#*']);
    grant.tableItems('certificates', ['ConditionCheckItem'], ['SERIAL#*']);
    grant.appendsAudit();
    // Before a replacement it reads the chains back for a signature made with the certificate's key.
    grant.tableItems('audit', ['Query'], ['CHAIN#*']);
    grant.tableKey();
    grant.login();
    grant.caCertificates(['root', 'issuing', 'ocsp', 'tsa']);
  },
  // The URLs it puts into certificates.
  connectPublicPki: (grant, pki) => grant.fn.addEnvironment(ENV.PKI_BASE_URL, pki.baseUrl),
};
