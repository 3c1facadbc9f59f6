import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';

/** What a synchronous invocation returned: the function's answer, and its error kind when it threw. */
export interface Invocation {
  /** The answer (JSON text), or the error document when `functionError` is set. */
  readonly payload: string;
  /** `Unhandled` (or `Handled`) when the function itself failed. */
  readonly functionError?: string;
}

/** One function of the stack, called through the Lambda Invoke API (the local runner serves it too). */
export class LambdaFunction {
  public constructor(
    private readonly client: LambdaClient,
    public readonly name: string,
  ) {}

  /** Runs the function with `payload` (JSON) and waits for its answer. */
  public async invoke(payload?: unknown): Promise<Invocation> {
    const out = await this.client.send(
      new InvokeCommand({
        FunctionName: this.name,
        ...(payload === undefined ? {} : { Payload: Buffer.from(JSON.stringify(payload)) }),
      }),
    );
    return {
      payload: Buffer.from(out.Payload ?? []).toString('utf8'),
      ...(out.FunctionError ? { functionError: out.FunctionError } : {}),
    };
  }

  /** Queues an invocation (asynchronous invoke) and returns once Lambda accepted it. */
  public async start(): Promise<void> {
    await this.client.send(new InvokeCommand({ FunctionName: this.name, InvocationType: 'Event' }));
  }
}
