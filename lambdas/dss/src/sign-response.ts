/**
 * Building and signing the DSS-Ext SignResponse (ELN-0609 §3.2, §4; ELN-0607 §2.2), element order as the
 * schemas' sequences want it. The signature is enveloped, the last child of OptionalOutputs (ELN-0609 §5).
 */
import { escapeXml, signXml, xmlDateTime, type XmlSigner } from '@pipeline/xml';
import { DSS_EXT_PROFILE, DSS_NS, ENTITY_FORMAT } from './namespaces';
import { DSS_STATUS, type DssStatus } from './status';
import type { AdesType, SamlAttribute, SigType } from './types';

const { dss, csig, saml } = DSS_NS;

/** Who signed and how, as the certificate's AuthContext states it (ELN-0609 §3.2.1). */
export interface SignerAssertionInfo {
  readonly identityProvider: string;
  readonly authenticationInstant: Date;
  readonly authnContextClassRef: string;
  readonly serviceId: string;
  readonly assertionRef: string;
  /** The attributes that went into the certificate. */
  readonly attributes: readonly SamlAttribute[];
  /** The assertion itself, when the e-service's registration asks for it. */
  readonly assertion?: Buffer;
}

export interface SignedTask {
  readonly signTaskId?: string;
  readonly sigType: SigType;
  readonly adesType: AdesType;
  /** The octets that were signed (updated for BES/EPES). */
  readonly toBeSignedBytes: Buffer;
  readonly adesObject?: { readonly signatureId?: string; readonly bytes?: Buffer };
  readonly signatureAlgorithm: string;
  readonly signature: Buffer;
}

export interface SignResponseInput {
  readonly requestId: string;
  readonly version: string;
  readonly responseTime: Date;
  readonly status: DssStatus;
  /** A human message: the rule that failed, never citizen data. */
  readonly message?: string;
  /** The posted request (base64): echoed for version 1.1 only, as ELN-0609 1.1 asked. */
  readonly encodedRequest?: string;
  readonly signerAssertionInfo?: SignerAssertionInfo;
  /** DER certificates, signer first, ending in the root. */
  readonly certificateChain?: readonly Buffer[];
  readonly tasks?: readonly SignedTask[];
}

/** The unsigned SignResponse XML. */
export function buildSignResponse(input: SignResponseInput): string {
  const status = DSS_STATUS[input.status];
  const result = el('dss:Result', {}, [
    el('dss:ResultMajor', {}, [escapeXml(status.major)]),
    'minor' in status ? el('dss:ResultMinor', {}, [escapeXml(status.minor)]) : '',
    input.message === undefined
      ? ''
      : el('dss:ResultMessage', { 'xml:lang': 'en' }, [escapeXml(input.message)]),
  ]);
  const extension = el('csig:SignResponseExtension', { Version: input.version }, [
    el('csig:ResponseTime', {}, [escapeXml(xmlDateTime(input.responseTime))]),
    input.version === '1.1' && input.encodedRequest !== undefined
      ? el('csig:Request', {}, [escapeXml(input.encodedRequest)])
      : '',
    input.signerAssertionInfo === undefined ? '' : signerAssertionInfoXml(input.signerAssertionInfo),
    input.certificateChain === undefined
      ? ''
      : el(
          'csig:SignatureCertificateChain',
          {},
          input.certificateChain.map((c) =>
            el('csig:X509Certificate', {}, [escapeXml(c.toString('base64'))]),
          ),
        ),
  ]);
  const tasks =
    input.tasks === undefined
      ? ''
      : el('dss:SignatureObject', {}, [
          el('dss:Other', {}, [el('csig:SignTasks', {}, input.tasks.map(signedTaskXml))]),
        ]);
  return el(
    'dss:SignResponse',
    {
      'xmlns:dss': dss,
      'xmlns:csig': csig,
      'xmlns:saml': saml,
      Profile: DSS_EXT_PROFILE,
      RequestID: input.requestId,
    },
    [result, el('dss:OptionalOutputs', {}, [extension]), tasks],
  );
}

/** Signs a built SignResponse with the service's response key. */
export async function signSignResponse(xml: string, signer: XmlSigner): Promise<string> {
  return signXml(xml, signer, {
    referenceId: '',
    location: { xpath: "/*/*[local-name()='OptionalOutputs']", action: 'append' },
  });
}

function signerAssertionInfoXml(info: SignerAssertionInfo): string {
  return el('csig:SignerAssertionInfo', {}, [
    el('csig:ContextInfo', {}, [
      el('csig:IdentityProvider', { Format: ENTITY_FORMAT }, [escapeXml(info.identityProvider)]),
      el('csig:AuthenticationInstant', {}, [escapeXml(xmlDateTime(info.authenticationInstant))]),
      el('saml:AuthnContextClassRef', {}, [escapeXml(info.authnContextClassRef)]),
      el('csig:ServiceID', {}, [escapeXml(info.serviceId)]),
      el('csig:AuthType', {}, [escapeXml('SAML')]),
      el('csig:AssertionRef', {}, [escapeXml(info.assertionRef)]),
    ]),
    el(
      'saml:AttributeStatement',
      {},
      info.attributes.map((a) =>
        el(
          'saml:Attribute',
          { Name: a.name, NameFormat: 'urn:oasis:names:tc:SAML:2.0:attrname-format:uri' },
          [...a.values.map((v) => el('saml:AttributeValue', {}, [escapeXml(v)]))],
        ),
      ),
    ),
    info.assertion === undefined
      ? ''
      : el('csig:SamlAssertions', {}, [
          el('csig:Assertion', {}, [escapeXml(info.assertion.toString('base64'))]),
        ]),
  ]);
}

function signedTaskXml(task: SignedTask): string {
  return el(
    'csig:SignTaskData',
    {
      ...(task.signTaskId === undefined ? {} : { SignTaskId: task.signTaskId }),
      SigType: task.sigType,
      AdESType: task.adesType,
    },
    [
      el('csig:ToBeSignedBytes', {}, [escapeXml(task.toBeSignedBytes.toString('base64'))]),
      task.adesObject === undefined
        ? ''
        : el('csig:AdESObject', {}, [
            task.adesObject.signatureId === undefined
              ? ''
              : el('csig:SignatureId', {}, [escapeXml(task.adesObject.signatureId)]),
            task.adesObject.bytes === undefined
              ? ''
              : el('csig:AdESObjectBytes', {}, [escapeXml(task.adesObject.bytes.toString('base64'))]),
          ]),
      el('csig:Base64Signature', { Type: task.signatureAlgorithm }, [
        escapeXml(task.signature.toString('base64')),
      ]),
    ],
  );
}

function el(name: string, attributes: Readonly<Record<string, string>>, content: readonly string[]): string {
  const attrs = Object.entries(attributes)
    .map(([k, v]) => ` ${k}="${escapeXml(v)}"`)
    .join('');
  const body = content.join('');
  return body === '' ? `<${name}${attrs}/>` : `<${name}${attrs}>${body}</${name}>`;
}
