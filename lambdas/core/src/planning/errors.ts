import { PipelineError } from '../shared/errors';

/** The planner's inputs do not fit together (no keygen rate for a forecast key type, bad numbers, ...). */
export class PlanInputError extends PipelineError {
  public override readonly name = 'PlanInputError';
  public constructor(
    message: string,
    public readonly field: string,
  ) {
    super(message, 'PLAN_INPUT_INVALID');
  }
}
