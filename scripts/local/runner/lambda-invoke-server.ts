/**
 * Plays the Lambda Invoke API (POST /2015-03-31/functions/{name}/invocations) for functions hosted by the
 * local runner, so a handler that calls another function through @aws-sdk/client-lambda runs unchanged:
 * request-response, and `Event` (asynchronous: 202 at once, the handler runs after). It listens on
 * 127.0.0.1 only, and every invocation must be signed by a caller allowed that function (invoke-auth.ts),
 * as IAM would decide: 403 otherwise, and the handler never runs.
 */
import { createServer, type Server } from 'node:http';
import type { Context } from 'aws-lambda';
import { lambdaContext } from './gateway';
import { authorizeInvoke, type InvokeCaller } from './invoke-auth';

export type InvokableHandler = (event: unknown, context: Context) => Promise<unknown>;

export interface InvokeServerOptions {
  /** Who may invoke what; a request signed by anyone else is refused. */
  readonly callers: readonly InvokeCaller[];
  /** Told of a failed asynchronous invocation (Lambda would retry it and then drop it). */
  readonly onAsyncError?: (name: string, err: Error) => void;
  /** Told of each refused invocation (its error type, never its body). */
  readonly onRefused?: (name: string, type: string) => void;
}

export function startLambdaInvokeServer(
  functions: Readonly<Record<string, InvokableHandler>>,
  options: InvokeServerOptions,
): Promise<Server> {
  const { onAsyncError } = options;
  const server = createServer((req, res) => {
    const found = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/.exec(req.url?.split('?')[0] ?? '');
    const name = found ? decodeURIComponent(found[1]).split(':').pop()! : '';
    const key = name in functions ? name : Object.keys(functions).find((f) => name.endsWith(f));
    const handler = key === undefined ? undefined : functions[key];
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => void serve(Buffer.concat(chunks)));
    const serve = async (body: Buffer): Promise<void> => {
      const decision = await authorizeInvoke(req, body, key ?? name, options.callers);
      if (!decision.allowed) {
        options.onRefused?.(name, decision.type);
        res.writeHead(decision.status, {
          'Content-Type': 'application/json',
          'x-amzn-ErrorType': decision.type,
        });
        res.end(JSON.stringify({ Type: 'User', message: decision.message }));
        return;
      }
      if (req.method !== 'POST' || !handler) {
        res.writeHead(404, {
          'Content-Type': 'application/json',
          'x-amzn-ErrorType': 'ResourceNotFoundException',
        });
        res.end(JSON.stringify({ Type: 'User', message: `Function not found: ${name}` }));
        return;
      }
      let payload: unknown;
      try {
        payload = body.length ? JSON.parse(body.toString('utf8')) : {};
      } catch {
        res.writeHead(400, {
          'Content-Type': 'application/json',
          'x-amzn-ErrorType': 'InvalidRequestContentException',
        });
        res.end(JSON.stringify({ Type: 'User', message: 'Could not parse request body into json' }));
        return;
      }
      if (req.headers['x-amz-invocation-type'] === 'Event') {
        res.writeHead(202, { 'Content-Type': 'application/json' });
        res.end();
        handler(payload, lambdaContext(name)).catch((err: Error) => onAsyncError?.(name, err));
        return;
      }
      handler(payload, lambdaContext(name)).then(
        (result) => {
          res.writeHead(200, { 'Content-Type': 'application/json', 'X-Amz-Executed-Version': '$LATEST' });
          res.end(JSON.stringify(result ?? null));
        },
        (err: Error) => {
          // Like Lambda: HTTP 200 with X-Amz-Function-Error and the error as the payload.
          res.writeHead(200, { 'Content-Type': 'application/json', 'X-Amz-Function-Error': 'Unhandled' });
          res.end(JSON.stringify({ errorType: err.name, errorMessage: err.message }));
        },
      );
    };
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}
