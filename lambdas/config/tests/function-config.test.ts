/**
 * A function's configuration is a value parsed from the environment record it is given: the loaders
 * read nothing else (the local runner configures its functions without writing process.env).
 */
import { loadConfig } from '../src/config';
import {
  loadApiFunctionConfig,
  loadCaSideFunctionConfig,
  loadCscFunctionConfig,
  loadKeygenFunctionConfig,
  loadSignerFunctionConfig,
} from '../src/function-config';
import { ConfigError } from '../src/errors';

const ISSUERS = JSON.stringify([{ issuer: 'https://idp.example', jwks: 'https://idp.example/jwks' }]);

describe('function configuration from an environment record', () => {
  const saved = { ...process.env };
  beforeEach(() => {
    // What the process environment says must not reach a configuration parsed from a record.
    Object.assign(process.env, {
      REQUESTS_TABLE_NAME: 'from-process-env',
      SIGN_QUEUE_URL: 'http://127.0.0.1:1/from-process-env',
      AUDIT_CHAINS: '3',
    });
  });
  afterEach(() => {
    process.env = { ...saved };
  });

  it('names each table from its variable in the record, else by its local name', () => {
    const { tables } = loadConfig({ REQUESTS_TABLE_NAME: 'p-sign-requests', AUDIT_TABLE_NAME: 'p-audit' });
    expect(tables.requests).toBe('p-sign-requests');
    expect(tables.audit).toBe('p-audit');
    expect(tables.keyPool).toBe('key-pool');
  });

  it('reads the pipeline, pool and audit settings from the record only', () => {
    const env = {
      SIGN_QUEUE_URL: 'http://127.0.0.1:9324/000000000000/p-sign-requests',
      POOL_SHARDS: '4',
      AUDIT_CHAINS: '16',
    };
    const signer = loadSignerFunctionConfig(env);
    expect(signer.pipeline.queueUrl).toBe(env.SIGN_QUEUE_URL);
    expect(signer.app.pool.shards).toBe(4);
    expect(signer.app.tables.requests).toBe('sign-requests');
    expect(signer.audit.chains).toBe(16);
    expect(loadKeygenFunctionConfig({}).audit.chains).toBe(8);
  });

  it("gives each function the parts it is wired from, and a bad value's variable in the error", () => {
    expect(loadApiFunctionConfig({ IDENTITY_TRUSTED_ISSUERS: ISSUERS }).identity.issuers).toHaveLength(1);
    expect(loadCaSideFunctionConfig({ CA_LEAF_VALIDITY_DAYS: '3' }).ca.leafValidityDays).toBe(3);
    expect(() => loadCaSideFunctionConfig({ CA_LEAF_VALIDITY_DAYS: 'x' })).toThrow(ConfigError);
  });

  it("parses the CSC settings once the clients' text is read", () => {
    const config = loadCscFunctionConfig({
      IDENTITY_TRUSTED_ISSUERS: ISSUERS,
      CSC_BASE_URL: 'http://127.0.0.1:8080/csc/v2',
      CSC_IDP_CLIENT_KEY: 'file:/dev/null',
      CSC_CLIENTS: 'file:/dev/null',
    });
    expect(config.secrets.clients).toEqual({ kind: 'file', path: '/dev/null' });
    const csc = config.csc(
      JSON.stringify([
        { clientId: 'c1', name: 'C', secretHash: 'ab'.repeat(32), redirectUris: ['http://127.0.0.1/cb'] },
      ]),
    );
    expect(csc.idpIssuer).toBe('https://idp.example');
    expect(csc.clients.map((c) => c.clientId)).toEqual(['c1']);
  });
});
