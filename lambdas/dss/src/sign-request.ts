/**
 * Reading a DSS-Ext SignRequest (ELN-0609 §3–4, ELN-0607 §2.1). Trust comes first: the SignRequester's
 * registration names the certificates that may sign its requests and the addresses a response may go to;
 * only a request whose signature verifies with one of them and whose Audience is one of them is answered
 * at all. Everything is then read from the signed octets the verifier returns, never from the posted
 * document, so nothing unsigned can be read as signed.
 */
import { SIGNATURE_METHODS, NS, parseXml, serializeXml, verifyXml } from '@pipeline/xml';
import { attribute, base64Of, children, dateTimeOf, optionalChild, requiredChild, textOf } from './dom';
import { DssRefusal, DssUntrustedRequestError } from './errors';
import { DEFAULT_SIGNATURE_ALGORITHM, DSS_EXT_PROFILE, DSS_NS, SUPPORTED_VERSIONS } from './namespaces';
import type {
  AdesType,
  CertType,
  DssClientRegistration,
  DssServiceContext,
  RequestedCertAttribute,
  SamlAttribute,
  SignMessage,
  SignRequest,
  SignTask,
  SigType,
} from './types';

const { dss, csig, saml } = DSS_NS;

/** Where a refusal is answered: the request's own id and version, at its registered return URL. */
export interface ReplyTo {
  readonly requestId: string;
  readonly version: string;
  readonly returnUrl: string;
  readonly registration: DssClientRegistration;
  /** The posted request, base64 (version 1.1 responses echo it). */
  readonly encodedRequest: string;
}

export type ReadResult =
  | { readonly kind: 'accepted'; readonly request: SignRequest; readonly replyTo: ReplyTo }
  | { readonly kind: 'refused'; readonly refusal: DssRefusal; readonly replyTo: ReplyTo };

/**
 * Reads and checks a posted SignRequest (base64, as the EidSignRequest form field). Throws
 * DssUntrustedRequestError when no response may be posted; otherwise the request, or the refusal to answer.
 */
export function readSignRequest(
  encoded: string,
  context: DssServiceContext,
  options: { readonly timeWindow?: boolean } = {},
): ReadResult {
  const xml = decodeRequest(encoded);
  const registration = registrationOf(xml, context);
  let signed: Element;
  try {
    const verified = verifyXml(xml, {
      trusted: registration.certificates,
      signature: signatureOf,
      referenceId: '',
    });
    signed = parseXml(verified.signedXml).documentElement;
  } catch (err) {
    throw new DssUntrustedRequestError(
      'the SignRequest is not signed by a registered key of its SignRequester',
      {
        cause: err,
      },
    );
  }
  const extension = extensionOf(signed);
  const returnUrl = extension === undefined ? undefined : audienceOf(extension);
  if (returnUrl === undefined || !registration.returnUrls.includes(returnUrl)) {
    throw new DssUntrustedRequestError(
      'the SignRequest names no return URL registered for its SignRequester',
    );
  }
  const replyTo: ReplyTo = {
    requestId: signed.getAttribute('RequestID') ?? '',
    version: extension?.getAttribute('Version') || '1.1',
    returnUrl,
    registration,
    encodedRequest: encoded,
  };
  try {
    const request = readModel(signed, returnUrl);
    checkRequest(request, registration, context, options.timeWindow ?? true);
    return { kind: 'accepted', request, replyTo };
  } catch (err) {
    if (err instanceof DssRefusal) return { kind: 'refused', refusal: err, replyTo };
    throw err;
  }
}

function decodeRequest(encoded: string): string {
  const compact = encoded.replace(/\s+/g, '');
  if (compact === '' || compact.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) {
    throw new DssUntrustedRequestError('EidSignRequest is not base64');
  }
  return Buffer.from(compact, 'base64').toString('utf8');
}

/** The registration the (not yet verified) SignRequester names: it only picks the keys to verify with. */
function registrationOf(xml: string, context: DssServiceContext): DssClientRegistration {
  let root: Element;
  try {
    root = parseXml(xml).documentElement;
  } catch (err) {
    throw new DssUntrustedRequestError('the SignRequest is not well-formed XML', { cause: err });
  }
  const requester = firstText(extensionOf(root), csig, 'SignRequester');
  const registration = context.registrations.find((r) => r.entityId === requester);
  if (registration === undefined) throw new DssUntrustedRequestError('the SignRequester is not registered');
  return registration;
}

/** The request's signature: the last child of OptionalInputs (ELN-0609 §5). */
function signatureOf(document: Document): Element | undefined {
  const root = document.documentElement;
  if (root.namespaceURI !== dss || root.localName !== 'SignRequest') return undefined;
  const inputs = children(root, dss, 'OptionalInputs')[0];
  let last = inputs?.lastChild ?? null;
  while (last !== null && last.nodeType !== 1) last = last.previousSibling;
  const element = last as Element | null;
  return element?.namespaceURI === NS.ds && element.localName === 'Signature' ? element : undefined;
}

function extensionOf(root: Element): Element | undefined {
  const inputs = children(root, dss, 'OptionalInputs')[0];
  return inputs === undefined ? undefined : children(inputs, csig, 'SignRequestExtension')[0];
}

function firstText(parent: Element | undefined, ns: string, name: string): string | undefined {
  const element = parent === undefined ? undefined : children(parent, ns, name)[0];
  return element === undefined ? undefined : textOf(element);
}

function audienceOf(extension: Element): string | undefined {
  const conditions = children(extension, saml, 'Conditions')[0];
  const restrictions = conditions === undefined ? [] : children(conditions, saml, 'AudienceRestriction');
  const audiences = restrictions.flatMap((r) => children(r, saml, 'Audience'));
  return audiences.length === 1 && audiences[0] !== undefined ? textOf(audiences[0]) : undefined;
}

function readModel(root: Element, audience: string): SignRequest {
  if (root.namespaceURI !== dss || root.localName !== 'SignRequest') {
    throw new DssRefusal('REQUESTER_ERROR', 'the message is not a SignRequest');
  }
  if (root.getAttribute('Profile') !== DSS_EXT_PROFILE) {
    throw new DssRefusal('NOT_SUPPORTED', 'the SignRequest Profile is not the DSS extension profile');
  }
  const extension = requiredChild(requiredChild(root, dss, 'OptionalInputs'), csig, 'SignRequestExtension');
  const conditions = requiredChild(extension, saml, 'Conditions');
  const certRequest = optionalChild(extension, csig, 'CertRequestProperties');
  const signMessage = optionalChild(extension, csig, 'SignMessage');
  const signerElement = optionalChild(extension, csig, 'Signer');
  const algorithm = optionalChild(extension, csig, 'RequestedSignatureAlgorithm');
  const notBefore = attribute(conditions, 'NotBefore');
  const notOnOrAfter = attribute(conditions, 'NotOnOrAfter');
  return {
    requestId: root.getAttribute('RequestID') ?? '',
    version: extension.getAttribute('Version') || '1.1',
    requestTime: dateTimeOf(textOf(requiredChild(extension, csig, 'RequestTime')), 'RequestTime'),
    conditions: {
      ...(notBefore === undefined ? {} : { notBefore: dateTimeOf(notBefore, 'Conditions/@NotBefore') }),
      ...(notOnOrAfter === undefined
        ? {}
        : { notOnOrAfter: dateTimeOf(notOnOrAfter, 'Conditions/@NotOnOrAfter') }),
      audience,
    },
    signer:
      signerElement === undefined ? [] : children(signerElement, saml, 'Attribute').map(samlAttributeOf),
    identityProvider: textOf(requiredChild(extension, csig, 'IdentityProvider')),
    signRequester: textOf(requiredChild(extension, csig, 'SignRequester')),
    signService: textOf(requiredChild(extension, csig, 'SignService')),
    signatureAlgorithm: algorithm === undefined ? DEFAULT_SIGNATURE_ALGORITHM : textOf(algorithm),
    certType: certTypeOf(certRequest),
    authnContextClassRefs:
      certRequest === undefined ? [] : children(certRequest, saml, 'AuthnContextClassRef').map(textOf),
    requestedCertAttributes: requestedAttributesOf(certRequest),
    ...(signMessage === undefined ? {} : { signMessage: signMessageOf(signMessage) }),
    tasks: tasksOf(root),
  };
}

/** A saml:Attribute: its Name and its values' text. */
export function samlAttributeOf(element: Element): SamlAttribute {
  const name = element.getAttribute('Name') ?? '';
  if (name === '') throw new DssRefusal('REQUESTER_ERROR', 'a saml:Attribute has no Name');
  return { name, values: children(element, saml, 'AttributeValue').map(textOf) };
}

function certTypeOf(certRequest: Element | undefined): CertType {
  const value = certRequest?.getAttribute('CertType') || 'PKC';
  if (value !== 'PKC' && value !== 'QC' && value !== 'QC/SSCD') {
    throw new DssRefusal('NOT_SUPPORTED', 'the CertType is not one of PKC, QC, QC/SSCD');
  }
  return value;
}

function requestedAttributesOf(certRequest: Element | undefined): RequestedCertAttribute[] {
  const list =
    certRequest === undefined ? undefined : optionalChild(certRequest, csig, 'RequestedCertAttributes');
  if (list === undefined) return [];
  return children(list, csig, 'RequestedCertAttribute').map((element) => {
    const nameType = element.getAttribute('CertNameType') || 'rdn';
    if (nameType !== 'rdn' && nameType !== 'san' && nameType !== 'sda') {
      throw new DssRefusal('REQUESTER_ERROR', 'a CertNameType is not rdn, san or sda');
    }
    const ref = element.getAttribute('CertAttributeRef') ?? '';
    if (ref === '')
      throw new DssRefusal('REQUESTER_ERROR', 'a RequestedCertAttribute has no CertAttributeRef');
    const friendlyName = attribute(element, 'FriendlyName');
    const defaultValue = attribute(element, 'DefaultValue');
    return {
      certAttributeRef: ref,
      certNameType: nameType,
      ...(friendlyName === undefined ? {} : { friendlyName }),
      ...(defaultValue === undefined ? {} : { defaultValue }),
      required: element.getAttribute('Required') === 'true',
      samlAttributeNames: children(element, csig, 'SamlAttributeName')
        .map((n) => ({ name: textOf(n), order: Number(n.getAttribute('Order') || '0') }))
        .sort((a, b) => a.order - b.order),
    };
  });
}

const MIME_TYPES = ['text', 'text/html', 'text/markdown'] as const;

function signMessageOf(element: Element): SignMessage {
  const mimeType = element.getAttribute('MimeType') || 'text';
  if (!(MIME_TYPES as readonly string[]).includes(mimeType)) {
    throw new DssRefusal(
      'REQUESTER_ERROR',
      'the SignMessage MimeType is not text, text/html or text/markdown',
    );
  }
  const plain = optionalChild(element, csig, 'Message');
  const encrypted = optionalChild(element, csig, 'EncryptedMessage');
  if ((plain === undefined) === (encrypted === undefined)) {
    throw new DssRefusal(
      'REQUESTER_ERROR',
      'the SignMessage must hold exactly one of Message and EncryptedMessage',
    );
  }
  const displayEntity = attribute(element, 'DisplayEntity');
  return {
    mustShow: element.getAttribute('MustShow') === 'true',
    ...(displayEntity === undefined ? {} : { displayEntity }),
    mimeType: mimeType as SignMessage['mimeType'],
    ...(plain === undefined ? {} : { message: base64Of(plain, 'the SignMessage Message') }),
    encrypted: encrypted !== undefined,
    xml: serializeXml(element),
  };
}

const SIG_TYPES: readonly SigType[] = ['XML', 'PDF', 'CMS'];
const ADES_TYPES: readonly AdesType[] = ['None', 'BES', 'EPES'];

function tasksOf(root: Element): SignTask[] {
  const other = requiredChild(requiredChild(root, dss, 'InputDocuments'), dss, 'Other');
  const signTasks = requiredChild(other, csig, 'SignTasks');
  return children(signTasks, csig, 'SignTaskData').map((element) => {
    const sigType = element.getAttribute('SigType') ?? '';
    if (!(SIG_TYPES as readonly string[]).includes(sigType)) {
      throw new DssRefusal('NOT_SUPPORTED', 'a SigType is not XML, PDF or CMS');
    }
    const adesType = element.getAttribute('AdESType') || 'None';
    if (!(ADES_TYPES as readonly string[]).includes(adesType)) {
      throw new DssRefusal('NOT_SUPPORTED', 'an AdESType is not None, BES or EPES');
    }
    if (element.hasAttribute('ProcessingRules')) {
      throw new DssRefusal('NOT_SUPPORTED', 'ProcessingRules are not supported');
    }
    const signTaskId = attribute(element, 'SignTaskId');
    const adesObject = optionalChild(element, csig, 'AdESObject');
    const signatureId = adesObject === undefined ? undefined : optionalChild(adesObject, csig, 'SignatureId');
    const objectBytes =
      adesObject === undefined ? undefined : optionalChild(adesObject, csig, 'AdESObjectBytes');
    return {
      ...(signTaskId === undefined ? {} : { signTaskId }),
      sigType: sigType as SigType,
      adesType: adesType as AdesType,
      toBeSignedBytes: base64Of(requiredChild(element, csig, 'ToBeSignedBytes'), 'ToBeSignedBytes'),
      ...(adesObject === undefined
        ? {}
        : {
            adesObject: {
              ...(signatureId === undefined ? {} : { signatureId: textOf(signatureId) }),
              ...(objectBytes === undefined ? {} : { bytes: base64Of(objectBytes, 'AdESObjectBytes') }),
            },
          }),
    };
  });
}

/** The rules beyond the shape: identity of the service, versions, time, tasks, what the client may ask. */
function checkRequest(
  request: SignRequest,
  registration: DssClientRegistration,
  context: DssServiceContext,
  timeWindow: boolean,
): void {
  if (request.requestId.length < 16)
    throw new DssRefusal('REQUESTER_ERROR', 'the RequestID is missing or too short');
  if (!(SUPPORTED_VERSIONS as readonly string[]).includes(request.version)) {
    throw new DssRefusal('NOT_SUPPORTED', 'the SignRequestExtension Version is not supported');
  }
  if (request.signService !== context.signServiceEntityId) {
    throw new DssRefusal('REQUESTER_ERROR', 'the SignService is not this service');
  }
  const now = context.now.getTime();
  const skew = context.clockSkewMs;
  const time = request.requestTime.getTime();
  // The window is the door's rule at arrival; the CA, later, bounds the login's age instead.
  if (timeWindow && (time > now + skew || time < now - context.maxRequestAgeMs - skew)) {
    throw new DssRefusal('REQUEST_EXPIRED', 'the RequestTime is outside the accepted window');
  }
  const { notBefore, notOnOrAfter } = request.conditions;
  if (
    timeWindow &&
    ((notBefore !== undefined && notBefore.getTime() > now + skew) ||
      (notOnOrAfter !== undefined && notOnOrAfter.getTime() <= now - skew))
  ) {
    throw new DssRefusal('REQUEST_EXPIRED', 'the request is outside its Conditions');
  }
  if (!Object.hasOwn(SIGNATURE_METHODS, request.signatureAlgorithm)) {
    throw new DssRefusal('NOT_SUPPORTED', 'the RequestedSignatureAlgorithm is not supported');
  }
  if (!registration.certTypes.includes(request.certType)) {
    throw new DssRefusal('NOT_SUPPORTED', 'the CertType is not allowed for this SignRequester');
  }
  const refused = request.authnContextClassRefs.filter(
    (loa) => registration.acceptedLoa.length > 0 && !registration.acceptedLoa.includes(loa),
  );
  if (refused.length > 0)
    throw new DssRefusal('UNSUPPORTED_LOA', 'a requested level of assurance is not accepted');
  checkTasks(request.tasks, context.maxTasks);
}

function checkTasks(tasks: readonly SignTask[], maxTasks: number): void {
  if (tasks.length === 0) throw new DssRefusal('REQUESTER_ERROR', 'the request has no SignTaskData');
  if (tasks.length > maxTasks)
    throw new DssRefusal('REQUESTER_ERROR', `the request has more than ${maxTasks} sign tasks`);
  if (tasks.length > 1) {
    const ids = tasks.map((t) => t.signTaskId);
    if (ids.some((id) => id === undefined) || new Set(ids).size !== ids.length) {
      throw new DssRefusal('REQUESTER_ERROR', 'several sign tasks need distinct SignTaskIds');
    }
  }
  for (const task of tasks) {
    if (task.toBeSignedBytes.length === 0)
      throw new DssRefusal('REQUESTER_ERROR', 'a ToBeSignedBytes is empty');
    if (task.sigType === 'XML' && task.adesType !== 'None' && !task.adesObject?.signatureId) {
      throw new DssRefusal('REQUESTER_ERROR', 'an XAdES task needs an AdESObject with a SignatureId');
    }
  }
}
