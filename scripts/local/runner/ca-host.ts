/**
 * The CA function (and the CRL publication it starts after a revocation) in a process of its own, behind
 * the Lambda Invoke endpoint, as the signer reaches it on AWS: the CA's certificate building and HSM
 * signing then have an event loop of their own, not the one of the gateway and the API. Prints
 * `listening <port>` once it answers; exits when its parent goes away (stdin closes) or on SIGTERM.
 */
import type { AddressInfo } from 'node:net';
import { createCaSideFunctions, invokableFunctions, invokeCallersFromEnv } from './pki';
import { startLambdaInvokeServer } from './lambda-invoke-server';

async function main(): Promise<void> {
  // A process of its own: its configuration is the environment the runner started it with.
  const functions = createCaSideFunctions(process.env);
  const server = await startLambdaInvokeServer(invokableFunctions(functions, process.env), {
    callers: invokeCallersFromEnv(),
    onAsyncError: (name, err) => console.error(`${name} (asynchronous) failed: ${err.name}: ${err.message}`),
    onRefused: (name, type) => console.error(`invocation of ${name} refused: ${type}`),
  });
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
  const shutdown = (): void => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 5_000).unref();
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
  process.stdin.on('end', shutdown);
  process.stdin.on('close', shutdown);
  process.stdin.resume();
}

main().catch((err: Error) => {
  console.error(`CA host failed to start: ${err.name}: ${err.message}`);
  process.exit(1);
});
