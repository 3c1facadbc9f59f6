import { resolve } from 'node:path';
import { ConfigError, DEFAULT_CA_POLICY_OID, loadCaConfig, pkiUrls } from '../src';

describe('loadCaConfig', () => {
  it('has local defaults: RSA-3072 CA, certificates in .local/ca, the signer PIN source', () => {
    const ca = loadCaConfig({ HSM_PIN_SOURCE: 'file:/tmp/user.pin' });
    expect(ca).toMatchObject({
      keyType: 'RSA-3072',
      rootKeyLabel: 'ca-root-v1',
      issuingKeyLabel: 'ca-issuing-v1',
      leafValidityDays: 1,
      policyOid: DEFAULT_CA_POLICY_OID,
      certsSource: { kind: 'file', dir: resolve('.local/ca') },
      pinSource: { kind: 'file', path: '/tmp/user.pin' },
    });
    expect(ca).toMatchObject({
      pkiBaseUrl: 'http://127.0.0.1:8080/pki',
      ocspKeyLabel: 'ocsp-signer-v1',
      ocspKeyType: 'EC-P256',
      crlValidityHours: 24,
    });
    // Short arcs only: every X.509 parser reads them.
    expect(DEFAULT_CA_POLICY_OID.split('.').every((arc) => Number(arc) < 2 ** 32)).toBe(true);
  });

  it('derives every PKI URL from PKI_BASE_URL', () => {
    const ca = loadCaConfig({ PKI_BASE_URL: 'http://pki.example.test/se/' });
    expect(pkiUrls(ca.pkiBaseUrl)).toEqual({
      issuingCrl: 'http://pki.example.test/se/issuing.crl',
      issuingCertificate: 'http://pki.example.test/se/issuing.crt',
      ocsp: 'http://pki.example.test/se/ocsp',
      tsa: 'http://pki.example.test/se/tsa',
      rootCrl: 'http://pki.example.test/se/root.crl',
      rootCertificate: 'http://pki.example.test/se/root.crt',
    });
  });

  it('reads every CA variable', () => {
    const ca = loadCaConfig({
      CA_KEY_TYPE: 'EC-P384',
      CA_CERTS_SOURCE: 'ssm:/signing/ca/',
      CA_HSM_PIN_SOURCE: 'secretsmanager:ca-crypto-user',
      CA_POLICY_OID: '1.2.752.201.3.1',
      PKI_BASE_URL: 'http://pki.example.test',
      CA_OCSP_KEY_TYPE: 'EC-P384',
      CA_LEAF_VALIDITY_DAYS: '30',
    });
    expect(ca).toMatchObject({
      keyType: 'EC-P384',
      certsSource: { kind: 'ssm', prefix: '/signing/ca' },
      pinSource: { kind: 'secretsmanager', secretId: 'ca-crypto-user' },
      policyOid: '1.2.752.201.3.1',
      pkiBaseUrl: 'http://pki.example.test',
      ocspKeyType: 'EC-P384',
      leafValidityDays: 30,
    });
  });

  it.each([
    ['CA_KEY_TYPE', 'RSA-2048'],
    ['CA_CERTS_SOURCE', 's3:bucket'],
    ['CA_POLICY_OID', '1.2.x'],
    ['CA_POLICY_OID', '2.25.22183097487315657123782375658291702029'],
    ['PKI_BASE_URL', 'ldap://crl.example.test'],
    ['PKI_BASE_URL', 'https://pki.example.test'],
    ['PKI_BASE_URL', 'not a url'],
    ['CA_OCSP_KEY_TYPE', 'RSA-1024'],
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
