import * as ssm from 'aws-cdk-lib/aws-ssm';
import { Construct } from 'constructs';
import type { IdentitySettings } from '../settings';

/** What a parameter holds until the refresher's first run: no keys, so nothing verifies yet. */
const EMPTY_JWKS = '{"keys":[]}';

/**
 * The trusted identity providers' signing keys, one SSM parameter per issuer (`<prefix>/jwks/<n>`): the
 * API function runs in isolated subnets without internet egress and reads them through the SSM endpoint;
 * the scheduled refresher (outside the VPC) keeps them current. Advanced tier: a JWKS during a rotation
 * can outgrow the standard tier's 4 KB.
 */
export class IdentityTrust extends Construct {
  public readonly parameters: ssm.StringParameter[];
  /** IDENTITY_TRUSTED_ISSUERS for the functions: each issuer with its parameter as the key source. */
  public readonly trustedIssuersEnv: string;

  public constructor(
    scope: Construct,
    id: string,
    private readonly settings: IdentitySettings,
  ) {
    super(scope, id);
    this.parameters = settings.issuers.map(
      (issuer, i) =>
        new ssm.StringParameter(this, `Jwks${i}`, {
          parameterName: `${settings.parameterPrefix}/jwks/${i}`,
          description: `Signing keys (JWKS) of the trusted OpenID Provider ${issuer}, kept current by the jwks-refresh function`,
          stringValue: EMPTY_JWKS,
          tier: ssm.ParameterTier.ADVANCED,
        }),
    );
    this.trustedIssuersEnv = JSON.stringify(
      settings.issuers.map((issuer, i) => ({
        issuer,
        jwks: `ssm:${settings.parameterPrefix}/jwks/${i}`,
      })),
    );
  }

  /** The identity settings every function that reads them gets (API and refresher). */
  public environment(): Record<string, string> {
    const { settings } = this;
    return {
      IDENTITY_MODE: settings.mode,
      IDENTITY_CLIENT_ID: settings.clientId,
      IDENTITY_TRUSTED_ISSUERS: this.trustedIssuersEnv,
      ...(settings.acceptedAcr ? { IDENTITY_ACCEPTED_ACR: settings.acceptedAcr.join(',') } : {}),
      ...(settings.trustedClients.length > 0
        ? { IDENTITY_TRUSTED_CLIENTS: settings.trustedClients.join(',') }
        : {}),
    };
  }
}
