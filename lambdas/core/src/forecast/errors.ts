import { PipelineError } from '../shared/errors';

/** The history or the options cannot produce a forecast (wrong bucket size, bad numbers, ...). */
export class ForecastInputError extends PipelineError {
  public override readonly name = 'ForecastInputError';
  public constructor(
    message: string,
    /** The option or field at fault. */
    public readonly field: string,
  ) {
    super(message, 'FORECAST_INPUT_INVALID');
  }
}
