/**
 * POST /sign: an e-service's SignRequest through the citizen's browser (ELN-0607 §3.1: Binding,
 * RelayState, EidSignRequest). A request of a registered e-service, signed with its key, for a return
 * URL it registered, is registered once by its RequestID, and the citizen is sent to the identity
 * provider it names with a signed AuthnRequest whose ID binds this very request; anything it asks that
 * the service refuses is answered there in a signed SignResponse.
 */
import { sadRequestId } from '@pipeline/core/identity';
import { autoPostForm, newFlowId, type HttpEvent, type HttpResult } from '@pipeline/doors';
import { DssRefusal, readSignRequest, type SignRequest } from '@pipeline/dss';
import { bindingOf, requestKey } from './binding';
import { DssDoorPageError } from './errors';
import { formOf } from './form';
import { respond } from './respond';
import type { DssExtDoorDeps } from './types';

const BINDING = 'POST/XML/1.0';
/** A RequestID stays registered a day beyond the time its request may be accepted. */
const REGISTER_MARGIN_SECONDS = 86_400;

export async function sign(event: HttpEvent, deps: DssExtDoorDeps): Promise<HttpResult> {
  const form = formOf(event);
  const encoded = form.get('EidSignRequest');
  if (!encoded) throw new DssDoorPageError(400, 'the form carries no EidSignRequest');
  const binding = form.get('Binding');
  if (binding !== null && binding !== BINDING) {
    throw new DssDoorPageError(400, `the Binding must be ${BINDING}`);
  }
  const now = (deps.now ?? Date.now)();
  const read = readSignRequest(encoded, { ...deps.config.service, now: new Date(now) });
  if (read.kind === 'refused') {
    return respond(deps, read.replyTo, { status: read.refusal.status, message: read.refusal.message });
  }
  const { request, replyTo } = read;
  try {
    if (form.get('RelayState') !== request.requestId) {
      throw new DssRefusal('REQUESTER_ERROR', 'the RelayState must be the RequestID');
    }
    const { service } = deps.config;
    const registered = await deps.store.registerRequest(
      requestKey(request),
      Math.ceil((now + service.maxRequestAgeMs + service.clockSkewMs) / 1000) + REGISTER_MARGIN_SECONDS,
    );
    if (!registered) throw new DssRefusal('REQUESTER_ERROR', 'the RequestID was used before');
    const { authnRequestId } = bindingOf(request, encoded);
    const idp = await deps.login.identityProvider(request.identityProvider);
    if (idp === undefined) {
      throw new DssRefusal('REQUESTER_ERROR', 'the IdentityProvider is not in the federation');
    }
    const loa = levelsOf(request, deps.config.defaultLoa, idp.assuranceCertifications);
    const flowId = newFlowId();
    await deps.store.putFlow(flowId, {
      signRequest: encoded,
      expiresAt: Math.ceil(now / 1000) + deps.config.flowSeconds,
    });
    const login = await deps.login.authnRequestForm({
      id: authnRequestId,
      issueInstant: new Date(now),
      idp: request.identityProvider,
      loa,
      requesterId: request.signRequester,
      ...(request.signMessage ? { signMessageXml: request.signMessage.xml } : {}),
      principalSelection: request.signer.flatMap((a) =>
        a.values.length > 0 ? [{ name: a.name, value: a.values[0]! }] : [],
      ),
      ...(request.certType === 'QC/SSCD'
        ? {
            sadRequest: {
              id: sadRequestId(authnRequestId),
              signRequestId: request.requestId,
              docCount: request.tasks.length,
            },
          }
        : {}),
      relayState: flowId,
    });
    return autoPostForm(login.action, login.fields);
  } catch (err) {
    if (err instanceof DssRefusal)
      return respond(deps, replyTo, { status: err.status, message: err.message });
    throw err;
  }
}

/**
 * The levels of assurance to ask for: the request's (else the service's default) that the identity
 * provider is certified for, when its metadata says; none left is `unsupported-loa` (ELN-0607 §2.1.3.8.2).
 */
function levelsOf(
  request: SignRequest,
  defaultLoa: readonly string[],
  certified: readonly string[],
): readonly string[] {
  const asked = request.authnContextClassRefs.length > 0 ? request.authnContextClassRefs : defaultLoa;
  const possible = certified.length === 0 ? asked : asked.filter((l) => certified.includes(l));
  if (possible.length === 0) {
    throw new DssRefusal(
      'UNSUPPORTED_LOA',
      'the identity provider is certified for none of the levels of assurance asked for',
    );
  }
  return possible;
}
