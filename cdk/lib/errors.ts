import { PipelineError } from '@pipeline/core/shared';

/** A deployment setting (CDK context) is missing or malformed. Messages name the key, never a secret. */
export class DeploymentSettingsError extends PipelineError {
  public override readonly name = 'DeploymentSettingsError';
  public constructor(
    message: string,
    public readonly contextKey: string,
  ) {
    super(message, 'DEPLOYMENT_SETTING_INVALID');
  }
}

/** The CloudHSM layer given to the app was not built for this stack (architecture, cluster, versions). */
export class LayerManifestError extends PipelineError {
  public override readonly name = 'LayerManifestError';
  public constructor(message: string) {
    super(message, 'LAYER_MANIFEST_INVALID');
  }
}

/** The OpenAPI request schema uses something API Gateway's JSON Schema draft-4 models cannot express. */
export class OpenApiModelError extends PipelineError {
  public override readonly name = 'OpenApiModelError';
  public constructor(message: string) {
    super(message, 'OPENAPI_MODEL_INVALID');
  }
}
