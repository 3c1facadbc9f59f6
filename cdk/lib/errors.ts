/** A deployment setting (CDK context) is missing or malformed. Messages name the key, never a secret. */
export class DeploymentSettingsError extends Error {
  public override readonly name = 'DeploymentSettingsError';
  public constructor(
    message: string,
    public readonly contextKey: string,
  ) {
    super(message);
  }
}

/** The CloudHSM layer given to the app was not built for this stack (architecture, cluster, versions). */
export class LayerManifestError extends Error {
  public override readonly name = 'LayerManifestError';
}

/** The OpenAPI request schema uses something API Gateway's JSON Schema draft-4 models cannot express. */
export class OpenApiModelError extends Error {
  public override readonly name = 'OpenApiModelError';
}
