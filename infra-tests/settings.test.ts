/** Deployment settings from context: what deploy requires, and what it refuses. No synth here. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeploymentSettingsError } from '../cdk/lib/errors';
import { loadIdentityConfig } from '@pipeline/config';
import { PLACEHOLDER_CSC_BASE_URL, PLACEHOLDER_ISSUER, parseSettings } from '../cdk/lib/settings';
import { TEST_CA_PEM } from './support/layer-fixture';

const ctx =
  (values: Record<string, unknown>) =>
  (key: string): unknown =>
    values[key];
const placeholders = { allowPlaceholderLayer: 'true' };

function errorOf(values: Record<string, unknown>): DeploymentSettingsError {
  try {
    parseSettings(ctx(values));
  } catch (err) {
    if (err instanceof DeploymentSettingsError) return err;
    throw err;
  }
  throw new Error('no error');
}

/** The context keys a deploy (no placeholders) requires up to the API clients, with a cluster CA file. */
function deployContext(): Record<string, unknown> {
  const caCert = join(mkdtempSync(join(tmpdir(), 'settings-')), 'customerCA.crt');
  writeFileSync(caCert, TEST_CA_PEM);
  return {
    cloudHsmLayerPath: 'x',
    hsmClusterId: 'cluster-abc',
    hsmSecurityGroupId: 'sg-0123abcd',
    hsmCaCertPath: caCert,
    ...VPC,
    lambdaConcurrencyQuota: '1000',
    identityIssuers: 'https://idp.example.se',
    cscBaseUrl: 'https://sign.example.se/csc/v2',
  };
}

/** The HSMs' VPC by attributes, as operations.md's deploy command gives it. */
const VPC = {
  vpcId: 'vpc-0123abcd',
  vpcCidr: '10.0.0.0/16',
  vpcAvailabilityZones: 'eu-north-1a,eu-north-1b',
  vpcIsolatedSubnetIds: 'subnet-0aaa,subnet-0bbb',
  vpcIsolatedRouteTableIds: 'rtb-0aaa,rtb-0bbb',
};

/** A deploy context complete but for what a test leaves out. */
function fullDeployContext(): Record<string, unknown> {
  return {
    ...deployContext(),
    apiClients: 'tax-agency=arn:aws:iam::123456789012:role/tax-agency',
    pkiEdgeWebAclArn:
      'arn:aws:wafv2:us-east-1:123456789012:global/webacl/PkiEdge/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b',
  };
}

describe('parseSettings', () => {
  it('without the placeholder flag, requires the layer and the cluster values', () => {
    expect(errorOf({}).contextKey).toBe('cloudHsmLayerPath');
    expect(errorOf({ cloudHsmLayerPath: 'x' }).contextKey).toBe('hsmClusterId');
    expect(errorOf({ cloudHsmLayerPath: 'x', hsmClusterId: 'cluster-abc' }).contextKey).toBe(
      'hsmSecurityGroupId',
    );
    expect(
      errorOf({ cloudHsmLayerPath: 'x', hsmClusterId: 'cluster-abc', hsmSecurityGroupId: 'sg-0123abcd' })
        .contextKey,
    ).toBe('hsmCaCertPath');
    const { vpcId: _vpc, ...withoutVpc } = deployContext();
    expect(errorOf(withoutVpc).contextKey).toBe('vpcId');
  });

  it("a built layer means a deploy: cdk.json's allowPlaceholderLayer=true does not let placeholders in", () => {
    const { hsmSecurityGroupId: _sg, ...withoutGroup } = fullDeployContext();
    expect(errorOf({ ...withoutGroup, allowPlaceholderLayer: true }).contextKey).toBe('hsmSecurityGroupId');
    const { pkiEdgeWebAclArn: _acl, ...withoutAcl } = fullDeployContext();
    expect(errorOf({ ...withoutAcl, allowPlaceholderLayer: true }).contextKey).toBe('pkiEdgeWebAclArn');
    const unbound = { ...fullDeployContext(), apiClients: 'tax-agency', allowPlaceholderLayer: true };
    expect(errorOf(unbound).contextKey).toBe('apiClients');
    const { identityIssuers: _issuers, ...withoutIssuers } = fullDeployContext();
    expect(errorOf({ ...withoutIssuers, allowPlaceholderLayer: true }).contextKey).toBe('identityIssuers');
    expect(
      parseSettings(ctx({ ...fullDeployContext(), allowPlaceholderLayer: true })).allowPlaceholders,
    ).toBe(false);
  });

  it('crypto user names are CloudHSM user names: letters, digits, underscores, at most 31', () => {
    const hsm = parseSettings(ctx(fullDeployContext())).hsm;
    for (const user of [hsm.signerUser, hsm.caUser, hsm.ocspUser, hsm.tsaUser, hsm.revokeUser]) {
      expect(user).toMatch(/^[A-Za-z0-9_]{1,31}$/);
    }
    for (const key of [
      'signerCryptoUser',
      'caCryptoUser',
      'ocspCryptoUser',
      'tsaCryptoUser',
      'revokeCryptoUser',
    ]) {
      expect(errorOf({ ...placeholders, [key]: 'pool-signer' }).contextKey).toBe(key);
      expect(errorOf({ ...placeholders, [key]: 'a'.repeat(32) }).contextKey).toBe(key);
      expect(parseSettings(ctx({ ...placeholders, [key]: 'A_1'.padEnd(31, 'x') }))).toBeDefined();
    }
  });

  it("a deploy needs the HSMs' VPC, with route tables for the gateway endpoints unless it has every endpoint", () => {
    const { vpcId: _vpc, ...withoutVpc } = fullDeployContext();
    expect(errorOf(withoutVpc).contextKey).toBe('vpcId');
    expect(parseSettings(ctx(fullDeployContext())).vpc?.createEndpoints).toBe(true);
    const { vpcIsolatedRouteTableIds: _rt, ...withoutRoutes } = fullDeployContext();
    expect(errorOf(withoutRoutes).contextKey).toBe('vpcIsolatedRouteTableIds');
    expect(parseSettings(ctx({ ...withoutRoutes, vpcCreateEndpoints: 'false' })).vpc?.createEndpoints).toBe(
      false,
    );
    // A placeholder synth may still make its own VPC to synthesize against.
    expect(parseSettings(ctx(placeholders)).vpc).toBeUndefined();
  });

  it("a deploy names the account's Lambda concurrency quota", () => {
    const { lambdaConcurrencyQuota: _q, ...withoutQuota } = fullDeployContext();
    const error = errorOf(withoutQuota);
    expect([error.contextKey, error.message]).toEqual([
      'lambdaConcurrencyQuota',
      expect.stringContaining('aws lambda get-account-settings'),
    ]);
    expect(parseSettings(ctx({ ...withoutQuota, lambdaConcurrencyQuota: 10 })).lambdaConcurrencyQuota).toBe(
      10,
    );
    expect(parseSettings(ctx(placeholders)).lambdaConcurrencyQuota).toBe(1000);
  });

  it('rejects malformed cluster ids and security groups', () => {
    expect(errorOf({ ...placeholders, hsmClusterId: 'my-cluster' }).contextKey).toBe('hsmClusterId');
    expect(errorOf({ ...placeholders, hsmSecurityGroupId: 'default' }).contextKey).toBe('hsmSecurityGroupId');
  });

  it('parses pool targets with the keygen parser and rejects unknown key types', () => {
    const settings = parseSettings(ctx({ ...placeholders, poolTargets: 'RSA-3072=40,EC-P256=7' }));
    expect(settings.pool.targets).toEqual({ 'RSA-3072': 40, 'EC-P256': 7 });
    expect(errorOf({ ...placeholders, poolTargets: 'RSA-1024=5' }).contextKey).toBe('poolTargets');
  });

  it("takes the on-the-fly fallback's bounds with the functions' defaults and ranges", () => {
    expect(parseSettings(ctx(placeholders)).pool).toMatchObject({
      fallbackMaxInFlight: 2,
      fallbackWaitMs: 2000,
    });
    const settings = parseSettings(
      ctx({ ...placeholders, poolFallbackMaxInFlight: '16', poolFallbackWaitMs: 5000 }),
    );
    expect(settings.pool).toMatchObject({ fallbackMaxInFlight: 16, fallbackWaitMs: 5000 });
    expect(errorOf({ ...placeholders, poolFallbackMaxInFlight: '0' }).contextKey).toBe(
      'poolFallbackMaxInFlight',
    );
    expect(errorOf({ ...placeholders, poolFallbackWaitMs: '60001' }).contextKey).toBe('poolFallbackWaitMs');
  });

  it('needs all attributes of an existing VPC (no lookup at synth)', () => {
    expect(errorOf({ ...placeholders, vpcId: 'vpc-123' }).contextKey).toBe('vpcId');
    const settings = parseSettings(
      ctx({
        ...placeholders,
        vpcId: 'vpc-123',
        vpcCidr: '10.1.0.0/16',
        vpcAvailabilityZones: 'eu-north-1a,eu-north-1b',
        vpcIsolatedSubnetIds: ['subnet-a', 'subnet-b'],
        vpcCreateEndpoints: false,
      }),
    );
    expect(settings.vpc?.isolatedSubnetIds).toEqual(['subnet-a', 'subnet-b']);
    expect(settings.vpc?.availabilityZones).toEqual(['eu-north-1a', 'eu-north-1b']);
    expect(settings.vpc?.createEndpoints).toBe(false);
    expect(
      errorOf({
        ...placeholders,
        vpcId: 'vpc-123',
        vpcCidr: '10.1.0.0/16',
        vpcAvailabilityZones: 'eu-north-1a',
        vpcIsolatedSubnetIds: 'subnet-a',
        vpcCreateEndpoints: 'true',
      }).contextKey,
    ).toBe('vpcIsolatedRouteTableIds');
  });

  it('parses scheduled scaling windows from JSON and refuses bad ones', () => {
    const windows = [{ name: 'peak', cron: '0 7 ? * MON-FRI *', min: 20, max: 40 }];
    const settings = parseSettings(ctx({ ...placeholders, signerScheduledScaling: JSON.stringify(windows) }));
    expect(settings.signer.scaling).toEqual(windows);
    expect(
      errorOf({ ...placeholders, signerScheduledScaling: '[{"name":"x","cron":"0 7 * *","min":5,"max":1}]' })
        .contextKey,
    ).toBe('signerScheduledScaling');
    expect(errorOf({ ...placeholders, signerProvisionedConcurrency: '-1' }).contextKey).toBe(
      'signerProvisionedConcurrency',
    );
  });

  it('API limits: stage 200/s (burst 400), each client 50/s (burst 100) and 1,000,000 a day by default', () => {
    expect(parseSettings(ctx(placeholders)).api.limits).toEqual({
      stage: { rateLimit: 200, burstLimit: 400 },
      client: { rateLimit: 50, burstLimit: 100, quotaPerDay: 1_000_000 },
    });
    const set = parseSettings(
      ctx({ ...placeholders, apiStageRateLimit: 500, apiClientRateLimit: '499', apiClientQuotaPerDay: '0' }),
    );
    expect(set.api.limits).toEqual({
      stage: { rateLimit: 500, burstLimit: 400 },
      client: { rateLimit: 499, burstLimit: 100, quotaPerDay: 0 },
    });
  });

  it("refuses a client limit that is not below the stage's, and the renamed keys", () => {
    expect(errorOf({ ...placeholders, apiClientRateLimit: '200' }).contextKey).toBe('apiClientRateLimit');
    expect(errorOf({ ...placeholders, apiStageBurstLimit: '100' }).contextKey).toBe('apiClientBurstLimit');
    expect(errorOf({ ...placeholders, apiClientQuotaPerDay: '-1' }).contextKey).toBe('apiClientQuotaPerDay');
    const renamed = errorOf({ ...placeholders, apiRateLimit: '100' });
    expect([renamed.contextKey, renamed.message]).toEqual([
      'apiRateLimit',
      'apiRateLimit is no longer read: set apiStageRateLimit and apiClientRateLimit',
    ]);
    expect(errorOf({ ...placeholders, apiBurstLimit: '100' }).contextKey).toBe('apiBurstLimit');
  });

  it("apiClients: each key's IAM principal (name=<ARN>), required for a deploy", () => {
    const role = 'arn:aws:iam::123456789012:role/tax-agency';
    const set = parseSettings(ctx({ ...placeholders, apiClients: `tax-agency=${role},pension-agency` }));
    expect(set.api.clients).toEqual(['tax-agency', 'pension-agency']);
    expect(set.api.principals).toEqual({ 'tax-agency': role });
    expect(errorOf({ ...placeholders, apiClients: 'tax-agency=role/tax' }).contextKey).toBe('apiClients');
    // Without the placeholder flag (a deploy), a key bound to no one is refused at synth.
    const deploy = deployContext();
    const bare = errorOf({ ...deploy, apiClients: `tax-agency=${role},pension-agency` });
    expect([bare.contextKey, bare.message]).toEqual([
      'apiClients',
      'apiClients: pension-agency needs its IAM principal (name=<principal ARN>) for a deploy',
    ]);
  });

  it("pkiEdgeWebAclArn: the distribution's CloudFront-scope web ACL, required for a deploy", () => {
    const arn =
      'arn:aws:wafv2:us-east-1:123456789012:global/webacl/PkiEdge/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b';
    expect(parseSettings(ctx({ ...placeholders })).pkiEdgeWebAclArn).toBeUndefined();
    expect(parseSettings(ctx({ ...placeholders, pkiEdgeWebAclArn: arn })).pkiEdgeWebAclArn).toBe(arn);
    // A regional web ACL cannot be attached to a distribution.
    const regional = arn.replace('us-east-1', 'eu-north-1').replace('global/', 'regional/');
    expect(errorOf({ ...placeholders, pkiEdgeWebAclArn: regional }).contextKey).toBe('pkiEdgeWebAclArn');
    const deploy = { ...deployContext(), apiClients: 'tax-agency=arn:aws:iam::123456789012:role/tax-agency' };
    expect(errorOf(deploy).contextKey).toBe('pkiEdgeWebAclArn');
    expect(parseSettings(ctx({ ...deploy, pkiEdgeWebAclArn: arn })).pkiEdgeWebAclArn).toBe(arn);
  });

  it("identity: each mode needs what the functions' loader needs (a trusted issuer, a registered client)", () => {
    const deploy = {
      ...deployContext(),
      apiClients: 'tax-agency=arn:aws:iam::123456789012:role/tax-agency',
      pkiEdgeWebAclArn:
        'arn:aws:wafv2:us-east-1:123456789012:global/webacl/PkiEdge/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b',
    };
    expect(parseSettings(ctx(deploy)).identity.issuers).toEqual(['https://idp.example.se']);
    const withoutIssuers = { ...deploy, identityIssuers: undefined };
    expect(errorOf(withoutIssuers).contextKey).toBe('identityIssuers');
    // A placeholder synth trusts an issuer that resolves nowhere instead.
    expect(parseSettings(ctx({ ...placeholders })).identity.issuers).toEqual([PLACEHOLDER_ISSUER]);
    expect(errorOf({ ...placeholders, identityMode: 'trusted-client' }).contextKey).toBe(
      'identityTrustedClients',
    );
    const client = 'arn:aws:iam::123456789012:role/legacy-eservice';
    const trustedOnly = { ...withoutIssuers, identityMode: 'trusted-client', identityTrustedClients: client };
    // The CSC API needs a provider its citizens log in at: without one, it is left out explicitly.
    expect(errorOf(trustedOnly).contextKey).toBe('cscIdpIssuer');
    const trusted = parseSettings(ctx({ ...trustedOnly, cscEnabled: 'false' })).identity;
    expect([trusted.mode, trusted.issuers, trusted.trustedClients]).toEqual(['trusted-client', [], [client]]);
    expect(errorOf({ ...placeholders, identityMode: 'anyone' }).contextKey).toBe('identityMode');
    // The same rule refuses the same configuration in the functions (IDENTITY_MODE and its variables).
    expect(() => loadIdentityConfig({ IDENTITY_MODE: 'trusted-client' })).toThrow(
      expect.objectContaining({ variable: 'IDENTITY_CLIENT_KEYS' }),
    );
    expect(() => loadIdentityConfig({ IDENTITY_MODE: 'assertion' })).toThrow(
      expect.objectContaining({ variable: 'IDENTITY_TRUSTED_ISSUERS' }),
    );
  });

  it('CSC API: a base URL under /csc/v2 required for a deploy, a trusted provider, a throttle within the stage', () => {
    const deploy = {
      ...deployContext(),
      apiClients: 'tax-agency=arn:aws:iam::123456789012:role/tax-agency',
      pkiEdgeWebAclArn:
        'arn:aws:wafv2:us-east-1:123456789012:global/webacl/PkiEdge/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b',
    };
    expect(parseSettings(ctx(deploy)).csc).toEqual({
      baseUrl: 'https://sign.example.se/csc/v2',
      idpIssuer: 'https://idp.example.se',
      rateLimit: 20,
      burstLimit: 40,
      callerLimits: { sourcePerMinute: 600, authorizeSourcePerMinute: 60, clientPerMinute: 600 },
    });
    const error = errorOf({ ...deploy, cscBaseUrl: undefined });
    expect([error.contextKey, error.message]).toEqual([
      'cscBaseUrl',
      expect.stringContaining('cscBaseUrl is required'),
    ]);
    for (const bad of [
      'http://sign.example.se/csc/v2',
      'https://sign.example.se/api',
      'https://sign.example.se',
    ]) {
      expect(errorOf({ ...deploy, cscBaseUrl: bad }).contextKey).toBe('cscBaseUrl');
    }
    expect(
      parseSettings(
        ctx({ ...deploy, cscBaseUrl: 'https://x.execute-api.eu-north-1.amazonaws.com/v1/csc/v2' }),
      ).csc?.baseUrl,
    ).toBe('https://x.execute-api.eu-north-1.amazonaws.com/v1/csc/v2');
    // The provider must be one the API trusts: the ID tokens it obtains are the sign requests' assertions.
    expect(errorOf({ ...deploy, cscIdpIssuer: 'https://other.example.com' }).contextKey).toBe('cscIdpIssuer');
    expect(errorOf({ ...deploy, cscIdpRedirectUri: 'http://sign.example.se/cb' }).contextKey).toBe(
      'cscIdpRedirectUri',
    );
    // Each CSC method's throttle cannot exceed the stage's (200/s, burst 400 by default).
    expect(errorOf({ ...deploy, cscRateLimit: '201' }).contextKey).toBe('cscRateLimit');
    expect(errorOf({ ...deploy, cscBurstLimit: '401' }).contextKey).toBe('cscBurstLimit');
    expect(parseSettings(ctx({ ...deploy, cscEnabled: 'false' })).csc).toBeUndefined();
    expect(parseSettings(ctx(placeholders)).csc?.baseUrl).toBe(PLACEHOLDER_CSC_BASE_URL);
  });

  it('CSC API: its limits per source and per client from context, at least the 10 a WAF rate rule takes', () => {
    const limits = parseSettings(
      ctx({
        ...placeholders,
        cscSourceRequestsPerMinute: '300',
        cscAuthorizeSourceRequestsPerMinute: '20',
        cscClientRequestsPerMinute: '120',
      }),
    ).csc?.callerLimits;
    expect(limits).toEqual({ sourcePerMinute: 300, authorizeSourcePerMinute: 20, clientPerMinute: 120 });
    for (const key of [
      'cscSourceRequestsPerMinute',
      'cscAuthorizeSourceRequestsPerMinute',
      'cscClientRequestsPerMinute',
    ]) {
      expect(errorOf({ ...placeholders, [key]: '9' }).contextKey).toBe(key);
    }
  });

  it('never puts a secret value in an error message', () => {
    const err = errorOf({ ...placeholders, hsmClusterId: 'cluster-S3CRET!' });
    expect(err.message).not.toContain('S3CRET');
  });
});
