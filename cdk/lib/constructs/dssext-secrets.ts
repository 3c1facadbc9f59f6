import { RemovalPolicy, SecretValue } from 'aws-cdk-lib';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { onlyReadByFunctions } from './hsm-access';

export interface DssExtSecretsProps {
  /** The stack's secrets key (HsmAccess). */
  readonly encryptionKey: kms.IKey;
}

/**
 * The DSS-Ext door's secrets, encrypted with the stack's secrets key: the service key (DSSEXT_SERVICE_KEY,
 * a PEM private key and its certificate chain that sign the AuthnRequests and SignResponses), read by the
 * door only; and the federation's operator-signed metadata (DSSEXT_FEDERATION_METADATA), read by the door,
 * the API and the CA (they verify DSS-Ext evidence against it). The operator puts their values after the
 * first deploy (docs/operations.md): the door refuses to start until the key is a PEM key and certificate,
 * and no DSS-Ext evidence verifies until the metadata is the federation's. Secrets Manager holds at most
 * 64 KiB a value. Keep these resources unchanged: CloudFormation replaces a value it generated when its
 * resource changes.
 */
export class DssExtSecrets extends Construct {
  public readonly serviceKey: secretsmanager.Secret;
  public readonly federationMetadata: secretsmanager.Secret;

  public constructor(scope: Construct, id: string, props: DssExtSecretsProps) {
    super(scope, id);
    this.serviceKey = new secretsmanager.Secret(this, 'ServiceKey', {
      encryptionKey: props.encryptionKey,
      description:
        'DSS-Ext door: PEM private key and certificate chain signing its AuthnRequests and SignResponses; put by the operator',
      // A random placeholder, not a PEM key: nothing can sign until the operator puts the service's key.
      generateSecretString: { passwordLength: 32, excludePunctuation: true },
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.federationMetadata = new secretsmanager.Secret(this, 'FederationMetadata', {
      encryptionKey: props.encryptionKey,
      description:
        "DSS-Ext: the federation's metadata XML, signed by its operator (DSSEXT_METADATA_TRUST); put by the operator",
      // Not metadata: no identity provider is known until the operator puts the federation's.
      secretStringValue: SecretValue.unsafePlainText('placeholder: put the federation metadata'),
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }

  /** The service key refuses every function of the stack but `door`; the metadata all but `readers`. */
  public onlyReadBy(door: IFunction, readers: readonly IFunction[]): void {
    onlyReadByFunctions(this.serviceKey, [door]);
    onlyReadByFunctions(this.federationMetadata, readers);
  }
}
