import { PipelineError } from '@pipeline/core/shared';

/** A configuration value is missing or malformed. The message names the variable, never its value. */
export class ConfigError extends PipelineError {
  public override readonly name = 'ConfigError';
  public constructor(
    message: string,
    public readonly variable: string,
  ) {
    super(message, 'CONFIG_INVALID');
  }
}
