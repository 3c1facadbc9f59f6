import { RemovalPolicy } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type { IFunction, ILayerVersion } from 'aws-cdk-lib/aws-lambda';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as ssm from 'aws-cdk-lib/aws-ssm';
import { Construct } from 'constructs';
import type { HsmSettings } from '../settings';
import { CloudHsmLayer } from './cloudhsm-layer';

/** CloudHSM client ports: 2223-2225 (SDK 5 uses 2223; the range is what the cluster's own group admits). */
export const HSM_PORTS = ec2.Port.tcpRange(2223, 2225);

/** Tag on every function role of the stack (value: the function's name): what the secrets' policies match. */
export const FUNCTION_ROLE_TAG = 'SigningPipelineFunction';

/** Characters left out of generated passwords: PIN syntax (`user:password`), quoting, and shell trouble. */
const PASSWORD_EXCLUDED = ':"\'\\/@` $&|;<>';

export interface HsmAccessProps {
  readonly vpc: ec2.IVpc;
  readonly hsm: HsmSettings;
  readonly layerPath?: string;
  readonly caCertsParameterPrefix: string;
}

/**
 * Everything that lets a function talk to the existing cluster: a client security group with a path to
 * the HSM ports only, the cluster's ingress rule for it, the layer, and the three crypto users'
 * credentials. The pool user (signer, keygen), the CA user (root and issuing keys), the OCSP responder's
 * and the TSA's users (their key only) and the revocation function's user (a share of the audit key only)
 * are separate HSM users with separate secrets, so a compromised signer cannot log in as the CA and sign
 * certificates, and neither the public OCSP responder nor the revocation function can reach the CA keys.
 */
export class HsmAccess extends Construct {
  /** Functions that log in to the HSM. */
  public readonly clientSecurityGroup: ec2.SecurityGroup;
  public readonly layer: ILayerVersion;
  public readonly layerIsPlaceholder: boolean;
  public readonly poolUserSecret: secretsmanager.Secret;
  public readonly caUserSecret: secretsmanager.Secret;
  public readonly ocspUserSecret: secretsmanager.Secret;
  public readonly tsaUserSecret: secretsmanager.Secret;
  public readonly revokeUserSecret: secretsmanager.Secret;
  /** The key of the stack's secrets: the crypto users' here, the CSC API's (CscSecrets). */
  public readonly secretsKey: kms.Key;
  public readonly caRootCertificate: ssm.StringParameter;
  public readonly caIssuingCertificate: ssm.StringParameter;
  public readonly caOcspCertificate: ssm.StringParameter;
  public readonly caTsaCertificate: ssm.StringParameter;

  public constructor(scope: Construct, id: string, props: HsmAccessProps) {
    super(scope, id);
    const { vpc, hsm } = props;
    this.clientSecurityGroup = new ec2.SecurityGroup(this, 'ClientSecurityGroup', {
      vpc,
      description: 'Lambda functions that use the CloudHSM cluster',
      allowAllOutbound: false,
    });
    const cluster = ec2.SecurityGroup.fromSecurityGroupId(this, 'ClusterSecurityGroup', hsm.securityGroupId, {
      mutable: true,
    });
    this.clientSecurityGroup.addEgressRule(cluster, HSM_PORTS, 'CloudHSM client ports only');
    // The cluster's group is owned by CloudHSM; this stack adds (and on delete removes) only its own rule.
    cluster.addIngressRule(this.clientSecurityGroup, HSM_PORTS, 'signing pipeline functions');
    allowEndpointTraffic(this.clientSecurityGroup);

    const layer = new CloudHsmLayer(this, 'CloudHsmLayer', {
      layerPath: props.layerPath,
      clusterId: hsm.clusterId,
      caCertificatePem: hsm.caCertificatePem,
    });
    this.layer = layer.layer;
    this.layerIsPlaceholder = layer.isPlaceholder;

    // The secrets are encrypted with a key of their own: reading one takes kms:Decrypt on it (granted with
    // each secret's read, through Secrets Manager only), not just the account's default key.
    const secretsKey = (this.secretsKey = new kms.Key(this, 'SecretsKey', {
      description: 'Signing pipeline HSM crypto users secrets',
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    }));
    const secret = (id: string, username: string, who: string): secretsmanager.Secret =>
      cryptoUserSecret(this, id, username, who, secretsKey);
    this.poolUserSecret = secret('PoolCryptoUser', hsm.signerUser, 'signer and keygen');
    this.caUserSecret = secret('CaCryptoUser', hsm.caUser, 'CA');
    this.ocspUserSecret = secret('OcspCryptoUser', hsm.ocspUser, 'OCSP responder');
    this.tsaUserSecret = secret('TsaCryptoUser', hsm.tsaUser, 'time-stamping authority');
    // The revocation function's user owns no key: the audit key is shared with it (key share), to sign
    // the heads of the audit entries it appends.
    this.revokeUserSecret = secret(
      'RevokeCryptoUser',
      hsm.revokeUser,
      'revocation function (audit key share only)',
    );

    // Placeholders: the CA bootstrap (run once against the cluster) overwrites them with the CA PEMs.
    // Keep these resources unchanged: CloudFormation rewrites the value whenever the resource changes.
    const certParameter = (name: 'root' | 'issuing' | 'ocsp' | 'tsa'): ssm.StringParameter => {
      const parameter = new ssm.StringParameter(
        this,
        `Ca${name.charAt(0).toUpperCase()}${name.slice(1)}Certificate`,
        {
          parameterName: `${props.caCertsParameterPrefix}/${name}.pem`,
          stringValue: 'PLACEHOLDER: written by the CA bootstrap',
          description:
            name === 'ocsp'
              ? 'PEM of the delegated OCSP responder certificate (public; renewed by the crl function)'
              : name === 'tsa'
                ? 'PEM of the time-stamping authority certificate (public; renewed by the crl function)'
                : `PEM of the ${name} CA certificate (public)`,
        },
      );
      parameter.applyRemovalPolicy(RemovalPolicy.RETAIN);
      return parameter;
    };
    this.caRootCertificate = certParameter('root');
    this.caIssuingCertificate = certParameter('issuing');
    this.caOcspCertificate = certParameter('ocsp');
    this.caTsaCertificate = certParameter('tsa');

    if (hsm.caCertificatePem) {
      new ssm.StringParameter(this, 'ClusterCaCertificate', {
        parameterName: `/signing-pipeline/cloudhsm/${hsm.clusterId}/customer-ca.pem`,
        stringValue: hsm.caCertificatePem,
        description:
          'Issuer of the CloudHSM cluster certificate (customerCA.crt), for the layer build and admin hosts',
      });
    }
  }

  /**
   * A crypto user's secret may be read by the functions named here only: its resource policy refuses
   * GetSecretValue to every other function role of the stack (tagged FUNCTION_ROLE_TAG), whatever their
   * own policies grant. Operators (no such tag) keep the access their own IAM policies give them.
   */
  public onlyReadBy(secret: secretsmanager.Secret, functions: readonly IFunction[]): void {
    onlyReadByFunctions(secret, functions);
  }
}

/**
 * A secret's resource policy refusing GetSecretValue to every function role of the stack (tagged
 * FUNCTION_ROLE_TAG) but those of `functions`; operators keep what their own IAM policies give them.
 */
export function onlyReadByFunctions(secret: secretsmanager.Secret, functions: readonly IFunction[]): void {
  const result = secret.addToResourcePolicy(
    new iam.PolicyStatement({
      sid: 'OnlyItsFunctions',
      effect: iam.Effect.DENY,
      principals: [new iam.AnyPrincipal()],
      actions: ['secretsmanager:GetSecretValue'],
      resources: ['*'],
      conditions: {
        Null: { [`aws:PrincipalTag/${FUNCTION_ROLE_TAG}`]: 'false' },
        ArnNotEquals: { 'aws:PrincipalArn': functions.map((fn) => fn.role!.roleArn) },
      },
    }),
  );
  if (!result.statementAdded) throw new Error('the secret refused its resource policy');
}

/** HTTPS to the VPC endpoints (the subnets have no other route out, so this reaches nothing else). */
export function allowEndpointTraffic(group: ec2.SecurityGroup): void {
  group.addEgressRule(
    ec2.Peer.anyIpv4(),
    ec2.Port.tcp(443),
    'HTTPS to VPC endpoints (no NAT in these subnets)',
  );
}

function cryptoUserSecret(
  scope: Construct,
  id: string,
  username: string,
  who: string,
  encryptionKey: kms.IKey,
): secretsmanager.Secret {
  return new secretsmanager.Secret(scope, id, {
    encryptionKey,
    description: `CloudHSM crypto user of the ${who} ({username, password}); the cluster bootstrap creates the user with it`,
    generateSecretString: {
      secretStringTemplate: JSON.stringify({ username }),
      generateStringKey: 'password',
      passwordLength: 32,
      excludeCharacters: PASSWORD_EXCLUDED,
    },
    removalPolicy: RemovalPolicy.RETAIN,
  });
}
