import { resolve } from 'node:path';
import { ConfigError, DEFAULT_CA_POLICY_OID, loadCaConfig } from '../src';

describe('loadCaConfig', () => {
  it('has local defaults: RSA-3072 CA, certificates in .local/ca, the signer PIN source', () => {
    const ca = loadCaConfig({ HSM_PIN_SOURCE: 'file:/tmp/user.pin' });
    expect(ca).toMatchObject({
      keyType: 'RSA-3072',
      rootKeyLabel: 'ca-root-v1',
      issuingKeyLabel: 'ca-issuing-v1',
      leafValidityDays: 365,
      policyOid: DEFAULT_CA_POLICY_OID,
      certsSource: { kind: 'file', dir: resolve('.local/ca') },
      pinSource: { kind: 'file', path: '/tmp/user.pin' },
    });
    expect(ca.crlUrl).toBeUndefined();
  });

  it('reads every CA variable', () => {
    const ca = loadCaConfig({
      CA_KEY_TYPE: 'EC-P384',
      CA_CERTS_SOURCE: 'ssm:/signing/ca/',
      CA_HSM_PIN_SOURCE: 'secretsmanager:ca-crypto-user',
      CA_POLICY_OID: '1.2.752.201.3.1',
      CA_CRL_URL: 'http://crl.example.test/ca.crl',
      CA_ISSUERS_URL: 'https://pki.example.test/ca.cer',
      CA_LEAF_VALIDITY_DAYS: '30',
    });
    expect(ca).toMatchObject({
      keyType: 'EC-P384',
      certsSource: { kind: 'ssm', prefix: '/signing/ca' },
      pinSource: { kind: 'secretsmanager', secretId: 'ca-crypto-user' },
      policyOid: '1.2.752.201.3.1',
      crlUrl: 'http://crl.example.test/ca.crl',
      caIssuersUrl: 'https://pki.example.test/ca.cer',
      leafValidityDays: 30,
    });
  });

  it.each([
    ['CA_KEY_TYPE', 'RSA-2048'],
    ['CA_CERTS_SOURCE', 's3:bucket'],
    ['CA_POLICY_OID', '1.2.x'],
    ['CA_CRL_URL', 'ldap://crl.example.test'],
    ['CA_OCSP_URL', 'not a url'],
    ['CA_LEAF_VALIDITY_DAYS', '0'],
    ['CA_COUNTRY', 'Sweden'],
    ['CA_HSM_PIN_SOURCE', '1234'],
  ])('refuses a malformed %s, naming the variable but not the value', (variable, value) => {
    let error: unknown;
    try {
      loadCaConfig({ [variable]: value });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe(variable);
    if (variable === 'CA_HSM_PIN_SOURCE') expect((error as Error).message).not.toContain(value);
  });
});
