/**
 * POST /saml/acs: the identity provider's answer to the login (SAMLResponse, RelayState = the flow). The
 * flow is answered once; its SignRequest is verified again (a table writer's flow is refused, nothing is
 * posted); the Response must be signed by the identity provider the request named and answer the
 * AuthnRequest ID this request makes. The assertion and the SignRequest go to the pipeline as the
 * evidence the CA verifies itself; the result, or why there is none, goes back in a signed SignResponse.
 * GET /flows/{flowId}: the same answer for a request that was still being signed.
 */
import { AssertionError, encodeDssEvidence, type SamlAssertionFacts } from '@pipeline/core/identity';
import { errorPage, type HttpEvent, type HttpResult } from '@pipeline/doors';
import { DssUntrustedRequestError, readSignRequest, type ReadResult } from '@pipeline/dss';
import type { SignRequestView } from '@pipeline/api';
import { bindingOf, clientOf, type RequestBinding } from './binding';
import { DssDoorPageError, STATUS_OF_LOGIN_REFUSAL, statusOfCode } from './errors';
import { formOf } from './form';
import { answerOf, respond } from './respond';
import type { DssExtDoorDeps, DssFlow } from './types';

/** How long one call waits for the pipeline's result (API Gateway answers within 29 s). */
const WAIT_SECONDS = 20;

export async function acs(event: HttpEvent, deps: DssExtDoorDeps): Promise<HttpResult> {
  const form = formOf(event);
  const flowId = form.get('RelayState');
  const encoded = form.get('SAMLResponse');
  if (!flowId || !encoded) throw new DssDoorPageError(400, 'the form carries no SAMLResponse and RelayState');
  const now = (deps.now ?? Date.now)();
  const flow = await deps.store.getFlow(flowId, Math.floor(now / 1000));
  if (flow === undefined || flow.assertion !== undefined) {
    throw new DssDoorPageError(400, 'no login waits for this answer: it expired or was answered');
  }
  const { request, replyTo, binding } = verifiedFlow(flow, deps, now);
  let answer;
  try {
    answer = await deps.login.readResponse(encoded, {
      issuer: request.identityProvider,
      inResponseTo: binding.authnRequestId,
    });
  } catch (err) {
    if (!(err instanceof AssertionError)) throw err;
    deps.logger.warn('SAML response refused', { code: err.code });
    return closed(deps, flowId, now, () =>
      respond(deps, replyTo, { status: 'AUTHN_FAILED', message: err.message }),
    );
  }
  if (answer.kind === 'refused') {
    const status = STATUS_OF_LOGIN_REFUSAL[answer.reason];
    return closed(deps, flowId, now, () =>
      respond(deps, replyTo, { status, message: `the identity provider answered ${answer.reason}` }),
    );
  }
  const { assertionXml, facts } = answer;
  // One answer per login: a second post of this (or any) Response finds the flow answered.
  if (!(await deps.store.answerFlow(flowId, b64(assertionXml), Math.floor(now / 1000)))) {
    throw new DssDoorPageError(400, 'no login waits for this answer: it expired or was answered');
  }
  const { pipeline } = binding;
  const outcome = await deps.intake.submit({
    clientId: clientOf(request),
    request: undefined,
    tasks: {
      requestId: pipeline.requestId,
      keyType: pipeline.keyType,
      signatureAlgorithm: pipeline.signatureAlgorithm,
      digestAlgorithm: pipeline.digestAlgorithm,
      tasks: pipeline.tasks,
      evidence: encodeDssEvidence({
        signRequest: binding.octets,
        assertion: Buffer.from(assertionXml, 'utf8'),
      }),
    },
    waitSeconds: WAIT_SECONDS,
  });
  if (outcome.kind === 'refused') {
    return respond(deps, replyTo, {
      status: statusOfCode(outcome.error.code),
      message: outcome.error.message,
    });
  }
  if (outcome.kind === 'accepted') return stillSigning(deps, flowId);
  return answered(deps, outcome.request, { request, replyTo, facts, assertionXml, flowId });
}

/** GET /flows/{flowId}: the result of an answered login once its request ended. */
export async function flowResult(flowId: string, deps: DssExtDoorDeps): Promise<HttpResult> {
  const now = (deps.now ?? Date.now)();
  const flow = await deps.store.getFlow(flowId, Math.floor(now / 1000));
  if (!flow?.assertion) throw new DssDoorPageError(404, 'no such signature in progress');
  const { request, replyTo, binding } = verifiedFlow(flow, deps, now);
  const assertionXml = Buffer.from(flow.assertion, 'base64').toString('utf8');
  let facts: SamlAssertionFacts;
  try {
    facts = await deps.login.assertionFacts(assertionXml);
  } catch {
    throw new DssDoorPageError(400, 'the login state is not valid');
  }
  const outcome = await deps.intake.read({
    clientId: clientOf(request),
    id: binding.pipeline.requestId,
    waitSeconds: WAIT_SECONDS,
  });
  if (outcome.kind === 'refused') {
    return respond(deps, replyTo, {
      status: statusOfCode(outcome.error.code),
      message: outcome.error.message,
    });
  }
  return answered(deps, outcome.request, { request, replyTo, facts, assertionXml, flowId });
}

function answered(
  deps: DssExtDoorDeps,
  view: SignRequestView,
  login: {
    request: Parameters<typeof answerOf>[1];
    replyTo: Parameters<typeof answerOf>[2];
    facts: SamlAssertionFacts;
    assertionXml: string;
    flowId: string;
  },
): Promise<HttpResult> | HttpResult {
  if (view.status !== 'signed' && view.status !== 'failed') return stillSigning(deps, login.flowId);
  return respond(
    deps,
    login.replyTo,
    answerOf(view, login.request, login.replyTo, { ...login, spEntityId: deps.config.spEntityId }),
  );
}

/** A page that asks again in a moment, for a request the pipeline is still signing. */
function stillSigning(deps: DssExtDoorDeps, flowId: string): HttpResult {
  const page = errorPage(202, 'Signing', 'Your signature is being made: this page continues by itself.');
  return {
    ...page,
    headers: {
      ...page.headers,
      Refresh: `2; url=${deps.config.baseUrl}/flows/${encodeURIComponent(flowId)}`,
    },
  };
}

/** The flow's SignRequest verified again: a flow a table writer made or changed is refused here. */
function verifiedFlow(
  flow: DssFlow,
  deps: DssExtDoorDeps,
  now: number,
): Extract<ReadResult, { kind: 'accepted' }> & { binding: RequestBinding } {
  let read: ReadResult;
  try {
    read = readSignRequest(
      flow.signRequest,
      { ...deps.config.service, now: new Date(now) },
      { timeWindow: false },
    );
  } catch (err) {
    if (err instanceof DssUntrustedRequestError)
      throw new DssDoorPageError(400, 'the login state is not valid');
    throw err;
  }
  if (read.kind !== 'accepted') throw new DssDoorPageError(400, 'the login state is not valid');
  return { ...read, binding: bindingOf(read.request, flow.signRequest) };
}

/** Answers a login that ended without an assertion, once. */
async function closed(
  deps: DssExtDoorDeps,
  flowId: string,
  now: number,
  answer: () => Promise<HttpResult>,
): Promise<HttpResult> {
  if (!(await deps.store.answerFlow(flowId, '', Math.floor(now / 1000)))) {
    throw new DssDoorPageError(400, 'no login waits for this answer: it expired or was answered');
  }
  return answer();
}

function b64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}
