/**
 * Records each AWS SDK call a function makes, when AWS_CALL_RECORD_FILE names a file: one JSON line per
 * call with the function, the service, the action, the resource named in the input and, for a read of
 * a missing S3 object, `missingObject`. The infra tests check such records against the deployed roles
 * and endpoints. Off (no middleware at all) unless the variable is set; only names are recorded, never
 * an input's values.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { appendFileSync } from 'node:fs';

export interface RecordedCall {
  readonly function: string;
  readonly service: string;
  /** The API action, e.g. `GetObject`, `TransactWriteItems`. */
  readonly action: string;
  /** Tables, queue URLs, function names, `bucket/key`, secret ids or parameter names of the input. */
  readonly resources: string[];
  readonly missingObject?: boolean;
}

const invocation = new AsyncLocalStorage<string>();

/** Runs `work` as an invocation of `functionName`: the calls it makes are recorded under that name. */
export function asFunction<T>(functionName: string | undefined, work: () => T): T {
  return functionName ? invocation.run(functionName, work) : work();
}

type Input = Record<string, unknown>;

/** The resources an input names, by the SDK's parameter names. */
export function resourcesOf(input: Input): string[] {
  const names: string[] = [];
  const add = (value: unknown): void => {
    if (typeof value === 'string') names.push(value);
  };
  add(input.TableName);
  for (const table of Object.keys((input.RequestItems as Input | undefined) ?? {})) add(table);
  for (const item of (input.TransactItems as Input[] | undefined) ?? []) {
    for (const operation of Object.values(item)) add((operation as Input | undefined)?.TableName);
  }
  add(input.QueueUrl);
  add(input.FunctionName);
  if (typeof input.Bucket === 'string')
    names.push(input.Key ? `${input.Bucket}/${String(input.Key)}` : input.Bucket);
  add(input.SecretId);
  add(input.Name);
  for (const name of (input.Names as unknown[] | undefined) ?? []) add(name);
  add(input.Path);
  return [...new Set(names)];
}

function isMissingObject(err: unknown): boolean {
  const name = (err as { name?: string } | undefined)?.name;
  return name === 'NoSuchKey' || name === 'NotFound';
}

interface MiddlewareStackOwner {
  readonly middlewareStack: {
    add(
      middleware: (
        next: (args: { input: Input }) => Promise<unknown>,
        context: { commandName?: string },
      ) => (args: { input: Input }) => Promise<unknown>,
      options: { step: 'initialize'; name: string },
    ): void;
  };
}

/** Adds the recording middleware to `client` when AWS_CALL_RECORD_FILE is set; returns the client. */
export function recorded<C>(client: C, service: string): C {
  const file = process.env.AWS_CALL_RECORD_FILE;
  if (!file) return client;
  (client as unknown as MiddlewareStackOwner).middlewareStack.add(
    (next, context) => async (args) => {
      const call = {
        function: invocation.getStore() ?? process.env.AWS_LAMBDA_FUNCTION_NAME ?? 'unknown',
        service,
        action: (context.commandName ?? 'Unknown').replace(/Command$/, ''),
        resources: resourcesOf(args.input),
      };
      try {
        const out = await next(args);
        appendFileSync(file, `${JSON.stringify(call satisfies RecordedCall)}\n`);
        return out;
      } catch (err) {
        const record: RecordedCall = isMissingObject(err) ? { ...call, missingObject: true } : call;
        appendFileSync(file, `${JSON.stringify(record)}\n`);
        throw err;
      }
    },
    { step: 'initialize', name: 'recordAwsCalls' },
  );
  return client;
}
