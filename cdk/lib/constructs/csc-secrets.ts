import { RemovalPolicy, SecretValue } from 'aws-cdk-lib';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { onlyReadByFunctions } from './hsm-access';

export interface CscSecretsProps {
  /** The stack's secrets key (HsmAccess). */
  readonly encryptionKey: kms.IKey;
}

/**
 * The CSC API's secrets, encrypted with the stack's secrets key and readable by the csc function only
 * (`onlyReadBy`): the service's private JWK at the identity provider (CSC_IDP_CLIENT_KEY) and the
 * registered CSC clients with their secret hashes (CSC_CLIENTS). The operator puts their values after
 * the first deploy (docs/operations.md): the function refuses to start until the key is a private JWK.
 * Keep these resources unchanged: CloudFormation replaces a value it generated when its resource changes.
 */
export class CscSecrets extends Construct {
  public readonly idpClientKey: secretsmanager.Secret;
  public readonly clients: secretsmanager.Secret;

  public constructor(scope: Construct, id: string, props: CscSecretsProps) {
    super(scope, id);
    this.idpClientKey = new secretsmanager.Secret(this, 'IdpClientKey', {
      encryptionKey: props.encryptionKey,
      description:
        "CSC API: this service's private JWK at the OpenID Provider (signs the signRequest); put by the operator",
      // A random placeholder, not a JWK: nothing can sign until the operator puts the registered key.
      generateSecretString: { passwordLength: 32, excludePunctuation: true },
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.clients = new secretsmanager.Secret(this, 'Clients', {
      encryptionKey: props.encryptionKey,
      description:
        'CSC API: the registered clients, JSON [{clientId, name, secretHash, redirectUris}]; put by the operator',
      // No client until the operator registers them (an empty list is no secret).
      secretStringValue: SecretValue.unsafePlainText('[]'),
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }

  /** Both secrets refuse every function of the stack but `fn`. */
  public onlyReadBy(fn: IFunction): void {
    for (const secret of [this.idpClientKey, this.clients]) onlyReadByFunctions(secret, [fn]);
  }
}
