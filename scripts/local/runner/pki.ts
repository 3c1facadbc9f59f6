/**
 * The CA-side functions the runner hosts behind its Lambda Invoke endpoint (in its own process, or in a CA
 * host process): the CA (certificates, revocations) and the CRL publication a revocation starts.
 */
import { loadCaConfig, loadPipelineConfig } from '../../../lambdas/config/src';
import type { InvokableHandler } from './lambda-invoke-server';

export async function caFunctions(): Promise<Record<string, InvokableHandler>> {
  const ca = (await import('../../../lambdas/handlers/ca')) as { handler: InvokableHandler };
  const crl = (await import('../../../lambdas/handlers/crl')) as { handler: InvokableHandler };
  return { [loadPipelineConfig().caFunctionName]: ca.handler, [loadCaConfig().crlFunctionName]: crl.handler };
}
