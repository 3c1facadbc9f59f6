/**
 * The CA-side functions the runner hosts behind its Lambda Invoke endpoint (in its own process, or in a CA
 * host process): the CA (certificates), the TSA and the OCSP responder (time-stamps and status for B-T and
 * B-LT), revocation, and the CRL publication a revocation starts; and who may invoke each (the signer the
 * CA, the TSA and the responder; the runner's API and the operators' tools revocation and publication),
 * with credentials made at start.
 */
import {
  loadCaConfig,
  loadCaFunctionConfig,
  loadCaSideFunctionConfig,
  loadPipelineConfig,
  type Env,
} from '@pipeline/config';
import {
  createCaHandler,
  createCrlHandler,
  createOcspHandler,
  createRevokeHandler,
  createTsaHandler,
  wireCa,
  wireCrl,
  wireOcsp,
  wireRevoke,
  wireTsa,
} from '../../../lambdas/handlers';
import type { ApiHandler } from './gateway';
import { newInvokeCaller, type InvokeCaller } from './invoke-auth';
import type { InvokableHandler } from './lambda-invoke-server';

/** The CA-side functions of one process, each wired once (their set-up runs on first use). */
export interface CaSideFunctions {
  readonly ca: InvokableHandler;
  readonly revoke: InvokableHandler;
  readonly crl: InvokableHandler;
  /** Also behind the gateway's public PKI endpoint. */
  readonly tsa: ApiHandler;
  readonly ocsp: ApiHandler;
}

/** Each wired from the configuration in `env` (their set-up, HSM logins included, runs on first use). */
export function createCaSideFunctions(env: Env): CaSideFunctions {
  const caSide = loadCaSideFunctionConfig(env);
  return {
    ca: createCaHandler(wireCa(loadCaFunctionConfig(env))),
    revoke: createRevokeHandler(wireRevoke(caSide)),
    crl: createCrlHandler(wireCrl(caSide)),
    tsa: createTsaHandler(wireTsa(caSide)),
    ocsp: createOcspHandler(wireOcsp(caSide)),
  };
}

/**
 * The CA-side functions before their configuration is complete (the Lambda endpoint they invoke is
 * known once the endpoint serving them listens): each call goes to the functions given to `wire`.
 */
export function deferredCaSideFunctions(): CaSideFunctions & { wire(functions: CaSideFunctions): void } {
  let wired: CaSideFunctions | undefined;
  const of = (): CaSideFunctions => {
    if (!wired) throw new Error('the CA-side functions are not wired yet');
    return wired;
  };
  return {
    ca: (event, context) => of().ca(event, context),
    revoke: (event, context) => of().revoke(event, context),
    crl: (event, context) => of().crl(event, context),
    tsa: (event, context) => of().tsa(event, context),
    ocsp: (event, context) => of().ocsp(event, context),
    wire: (functions) => {
      wired = functions;
    },
  };
}

/** The functions behind the Lambda Invoke endpoint, by their names configured in `env`. */
export function invokableFunctions(functions: CaSideFunctions, env: Env): Record<string, InvokableHandler> {
  const pipeline = loadPipelineConfig(env);
  return {
    [pipeline.caFunctionName]: functions.ca,
    ...(pipeline.timeStamping.kind === 'function'
      ? { [pipeline.timeStamping.functionName]: functions.tsa as InvokableHandler }
      : {}),
    [pipeline.ocspFunctionName]: functions.ocsp as InvokableHandler,
    [pipeline.revokeFunctionName]: functions.revoke,
    [loadCaConfig(env).crlFunctionName]: functions.crl,
  };
}

/** The two callers of the CA-side functions, as two IAM roles would be on AWS. */
export interface InvokeCallers {
  /** The signer consumers: issuance only. */
  readonly signer: InvokeCaller;
  /** The runner's own functions (API, schedules, the revocation function, the CSC function) and the operator tools. */
  readonly runner: InvokeCaller;
}

export function newInvokeCallers(env: Env): InvokeCallers {
  const pipeline = loadPipelineConfig(env);
  return {
    signer: newInvokeCaller('signer', [
      pipeline.caFunctionName,
      pipeline.ocspFunctionName,
      ...(pipeline.timeStamping.kind === 'function' ? [pipeline.timeStamping.functionName] : []),
    ]),
    // The runner also hosts the CSC function, whose signatures/timestamp reaches the TSA as the signer does.
    runner: newInvokeCaller('runner', [
      pipeline.revokeFunctionName,
      loadCaConfig(env).crlFunctionName,
      ...(pipeline.timeStamping.kind === 'function' ? [pipeline.timeStamping.functionName] : []),
    ]),
  };
}

/** How a CA host process learns the callers (its parent's generated credentials). */
export const INVOKE_CALLERS_ENV = 'LOCAL_INVOKE_CALLERS';

export function invokeCallersFromEnv(env: NodeJS.ProcessEnv = process.env): InvokeCaller[] {
  const raw = env[INVOKE_CALLERS_ENV];
  if (!raw) throw new Error(`${INVOKE_CALLERS_ENV} is not set: the runner starts the CA host`);
  return JSON.parse(raw) as InvokeCaller[];
}
