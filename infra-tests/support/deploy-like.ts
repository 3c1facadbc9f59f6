/**
 * The deploy-like synthesis: a built layer (fake, checked by manifest), an existing VPC by attributes,
 * HSM cluster, scheduled scaling, API clients, identity and CSC settings; code assets not bundled.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeLayer, TEST_CA_PEM } from './layer-fixture';
import { synthesize, type Synthesized } from './synth';

export const EDGE_WEB_ACL =
  'arn:aws:wafv2:us-east-1:123456789012:global/webacl/PkiEdge/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b';

/** The deploy-like stack, and a clean-up for the files it was built from. */
export function synthesizeDeployLike(): { synth: Synthesized; cleanup: () => void } {
  const layerDir = fakeLayer();
  const certDir = mkdtempSync(join(tmpdir(), 'cluster-ca-'));
  const certPath = join(certDir, 'customerCA.crt');
  writeFileSync(certPath, TEST_CA_PEM);
  const synth = synthesize(
    {
      allowPlaceholderLayer: false,
      cloudHsmLayerPath: layerDir,
      hsmClusterId: 'cluster-abc123',
      hsmSecurityGroupId: 'sg-0123456789abcdef0',
      hsmCaCertPath: certPath,
      vpcId: 'vpc-0123456789abcdef0',
      vpcCidr: '10.20.0.0/16',
      vpcAvailabilityZones: 'eu-north-1a,eu-north-1b',
      vpcIsolatedSubnetIds: 'subnet-0aaaaaaaaaaaaaaaa,subnet-0bbbbbbbbbbbbbbbb',
      vpcIsolatedRouteTableIds: 'rtb-0aaaaaaaaaaaaaaaa,rtb-0bbbbbbbbbbbbbbbb',
      lambdaConcurrencyQuota: '1000',
      signerProvisionedConcurrency: '4',
      poolFallbackMaxInFlight: '16',
      poolFallbackWaitMs: '5000',
      signerScheduledScaling: JSON.stringify([
        { name: 'deadline-peak', cron: '0 6 ? * MON-FRI *', min: 40, max: 60 },
        { name: 'evening', cron: '0 18 ? * MON-FRI *', min: 4, max: 4 },
      ]),
      apiClients:
        'tax-agency=arn:aws:iam::123456789012:role/tax-agency,pension-agency=arn:aws:iam::123456789012:role/pension-agency',
      apiStageRateLimit: '1000',
      apiStageBurstLimit: '2000',
      apiClientRateLimit: '300',
      apiClientBurstLimit: '600',
      apiClientQuotaPerDay: '5000000',
      identityIssuers: 'https://idp.example.se,https://eid.example.org/op',
      identityTrustedClients: 'arn:aws:iam::123456789012:role/legacy-eservice',
      pkiEdgeWebAclArn: EDGE_WEB_ACL,
      cscBaseUrl: 'https://sign.example.se/csc/v2',
      cscIdpIssuer: 'https://eid.example.org/op',
      cscIdpRedirectUri: 'https://sign.example.se/csc/v2/oauth2/callback',
    },
    { bundle: false },
  );
  return {
    synth,
    cleanup: () => [layerDir, certDir].forEach((d) => rmSync(d, { recursive: true, force: true })),
  };
}
