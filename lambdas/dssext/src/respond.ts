/**
 * The door's answers to the e-service: a signed SignResponse in an auto-posting form to the request's
 * registered return URL (ELN-0607 §3.1.2), with the status, or the signatures, chain and signer.
 */
import type { SamlAssertionFacts } from '@pipeline/core/identity';
import { pemToDer } from '@pipeline/der';
import { autoPostForm, type HttpResult } from '@pipeline/doors';
import {
  buildSignResponse,
  signSignResponse,
  type ReplyTo,
  type SignRequest,
  type SignResponseInput,
} from '@pipeline/dss';
import type { SignRequestView } from '@pipeline/api';
import { statusOfCode } from './errors';
import type { DssExtDoorDeps } from './types';

type Answer = Omit<SignResponseInput, 'requestId' | 'version' | 'responseTime' | 'encodedRequest'>;

export async function respond(deps: DssExtDoorDeps, replyTo: ReplyTo, answer: Answer): Promise<HttpResult> {
  const xml = buildSignResponse({
    ...answer,
    requestId: replyTo.requestId,
    version: replyTo.version,
    responseTime: new Date((deps.now ?? Date.now)()),
    encodedRequest: replyTo.encodedRequest,
  });
  const signed = await signSignResponse(xml, deps.responseSigner);
  return autoPostForm(replyTo.returnUrl, {
    Binding: 'POST/XML/1.0',
    RelayState: replyTo.requestId,
    EidSignResponse: Buffer.from(signed, 'utf8').toString('base64'),
  });
}

/** The SignResponse of a request that ended: its tasks' signatures under one certificate, or why not. */
export function answerOf(
  view: SignRequestView,
  request: SignRequest,
  replyTo: ReplyTo,
  login: { readonly facts: SamlAssertionFacts; readonly assertionXml: string; readonly spEntityId: string },
): Answer {
  if (view.status !== 'signed') {
    const code = view.error?.code ?? 'INTERNAL';
    return { status: statusOfCode(code), message: view.error?.message ?? 'the signature failed' };
  }
  const documents = view.documents ?? [];
  const certificate = view.certificate as string;
  const chain = (view.chain as string[] | undefined) ?? [];
  return {
    status: 'SUCCESS',
    tasks: request.tasks.map((task, i) => {
      const result = documents[i]!;
      return {
        signTaskId: task.signTaskId,
        sigType: task.sigType,
        adesType: task.adesType,
        toBeSignedBytes: Buffer.from(result.toBeSignedBytes ?? '', 'base64'),
        ...(result.adesObject === undefined
          ? {}
          : {
              adesObject: {
                signatureId: task.adesObject?.signatureId,
                bytes: Buffer.from(result.adesObject, 'base64'),
              },
            }),
        signatureAlgorithm: request.signatureAlgorithm,
        signature: Buffer.from(result.signature ?? '', 'base64'),
      };
    }),
    certificateChain: [certificate, ...chain].map((pem) => pemToDer(pem)),
    signerAssertionInfo: {
      identityProvider: login.facts.issuer,
      authenticationInstant: new Date(login.facts.authnInstant),
      authnContextClassRef: login.facts.authnContextClassRef,
      serviceId: login.spEntityId,
      assertionRef: login.facts.id,
      attributes: certifiedAttributes(login.facts, request),
      ...(replyTo.registration.includeAssertion
        ? { assertion: Buffer.from(login.assertionXml, 'utf8') }
        : {}),
    },
  };
}

/** The framework's attributes for the certificate's fields, and those the request mapped. */
const DEFAULT_CERTIFIED = [
  'urn:oid:1.2.752.29.4.13',
  'urn:oid:2.5.4.42',
  'urn:oid:2.5.4.4',
  'urn:oid:2.16.840.1.113730.3.1.241',
];

/** The assertion's attributes that can have gone into the certificate (ELN-0609 §3.2.1: only those). */
function certifiedAttributes(
  facts: SamlAssertionFacts,
  request: SignRequest,
): SamlAssertionFacts['attributes'] {
  const names = new Set([
    ...DEFAULT_CERTIFIED,
    ...request.requestedCertAttributes.flatMap((a) => a.samlAttributeNames.map((n) => n.name)),
  ]);
  return facts.attributes.filter((a) => names.has(a.name));
}
