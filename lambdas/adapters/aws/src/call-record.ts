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
  /**
   * DynamoDB: each item the call reads or writes, as IAM evaluates it (a transaction's or batch's items
   * by their own actions), with the shape of its partition key `pk` (see keyShape), for
   * dynamodb:LeadingKeys conditions.
   */
  readonly items?: ItemAccess[];
}

export interface ItemAccess {
  readonly table: string;
  /** The per-item action, e.g. `PutItem` for a transaction's Put. */
  readonly action: string;
  readonly key?: string;
  /** A Query's or Scan's index: IAM evaluates it on `<table>/index/<name>`. */
  readonly index?: string;
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

/**
 * A partition key's shape, not its value: upper-case constant segments kept, every other segment `x`
 * (`SERIAL#0a1b` -> `SERIAL#x`, `CHECKPOINT#HEAD` stays): what the roles' LeadingKeys patterns name.
 */
export function keyShape(value: string): string {
  return value
    .split('#')
    .map((segment) => (/^[A-Z_]+$/.test(segment) ? segment : 'x'))
    .join('#');
}

/** The `pk` of a key or item, marshalled (`{ S: ... }`) or not. */
function pkOf(record: unknown): string | undefined {
  const pk = (record as Input | undefined)?.pk;
  const value = typeof pk === 'object' && pk !== null ? (pk as Input).S : pk;
  return typeof value === 'string' ? keyShape(value) : undefined;
}

const TRANSACT_ACTIONS: Record<string, string> = {
  Put: 'PutItem',
  Update: 'UpdateItem',
  Delete: 'DeleteItem',
  ConditionCheck: 'ConditionCheckItem',
  Get: 'GetItem',
};

/** The items a DynamoDB call reads or writes, by their per-item actions. */
export function itemsOf(action: string, input: Input): ItemAccess[] {
  const items: ItemAccess[] = [];
  const add = (table: unknown, itemAction: string, record?: unknown, index?: unknown): void => {
    if (typeof table !== 'string') return;
    const key = pkOf(record);
    items.push({
      table,
      action: itemAction,
      ...(key === undefined ? {} : { key }),
      ...(typeof index === 'string' ? { index } : {}),
    });
  };
  for (const entry of (input.TransactItems as Input[] | undefined) ?? []) {
    for (const [kind, operation] of Object.entries(entry)) {
      const op = operation as Input;
      add(op.TableName, TRANSACT_ACTIONS[kind] ?? kind, op.Key ?? op.Item);
    }
  }
  for (const [table, request] of Object.entries((input.RequestItems as Input | undefined) ?? {})) {
    if (Array.isArray(request)) {
      for (const write of request as Input[]) {
        // IAM authorizes a batch write as BatchWriteItem (a transaction's items by their own actions).
        if (write.PutRequest) add(table, action, (write.PutRequest as Input).Item);
        if (write.DeleteRequest) add(table, action, (write.DeleteRequest as Input).Key);
      }
    } else {
      for (const key of ((request as Input).Keys as unknown[] | undefined) ?? []) add(table, action, key);
    }
  }
  if (typeof input.TableName === 'string') {
    const values = input.ExpressionAttributeValues as Input | undefined;
    const record = input.Key ?? input.Item ?? (values?.[':pk'] ? { pk: values[':pk'] } : undefined);
    add(input.TableName, action, record, input.IndexName);
  }
  return items;
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
      const action = (context.commandName ?? 'Unknown').replace(/Command$/, '');
      const call: RecordedCall = {
        function: invocation.getStore() ?? process.env.AWS_LAMBDA_FUNCTION_NAME ?? 'unknown',
        service,
        action,
        resources: resourcesOf(args.input),
        ...(service === 'dynamodb' ? { items: itemsOf(action, args.input) } : {}),
      };
      try {
        const out = await next(args);
        appendFileSync(file, `${JSON.stringify(call)}\n`);
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
