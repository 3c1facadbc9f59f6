import * as ssm from 'aws-cdk-lib/aws-ssm';
import { Construct } from 'constructs';
import { ENV } from '@pipeline/config';
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
  /** One per registered client (`<prefix>/clients/<n>`): its request-object keys, put there by operators. */
  public readonly clientParameters: ssm.StringParameter[];
  /** IDENTITY_TRUSTED_ISSUERS for the functions: each issuer with its parameter as the key source. */
  public readonly trustedIssuersEnv: string;
  /** IDENTITY_CLIENT_KEYS for the functions: each registered client with its parameter. */
  public readonly clientKeysEnv: string;

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
    this.clientParameters = settings.trustedClients.map(
      (client, i) =>
        new ssm.StringParameter(this, `ClientKeys${i}`, {
          parameterName: `${settings.parameterPrefix}/clients/${i}`,
          description: `Request-object signing keys (JWKS) of the client ${client}, which may vouch for its signers`,
          stringValue: EMPTY_JWKS,
          tier: ssm.ParameterTier.ADVANCED,
        }),
    );
    this.clientKeysEnv = JSON.stringify(
      settings.trustedClients.map((client, i) => ({
        client,
        jwks: `ssm:${settings.parameterPrefix}/clients/${i}`,
      })),
    );
    this.trustedIssuersEnv = JSON.stringify(
      settings.issuers.map((issuer, i) => ({
        issuer,
        jwks: `ssm:${settings.parameterPrefix}/jwks/${i}`,
      })),
    );
  }

  /** The identity settings every function that reads them gets (API, CA and refresher). */
  public environment(): Record<string, string> {
    const { settings } = this;
    return {
      [ENV.IDENTITY_MODE]: settings.mode,
      [ENV.IDENTITY_CLIENT_ID]: settings.clientId,
      [ENV.IDENTITY_TRUSTED_ISSUERS]: this.trustedIssuersEnv,
      ...(settings.acceptedAcr ? { [ENV.IDENTITY_ACCEPTED_ACR]: settings.acceptedAcr.join(',') } : {}),
      ...(settings.trustedClients.length > 0 ? { [ENV.IDENTITY_CLIENT_KEYS]: this.clientKeysEnv } : {}),
    };
  }
}
