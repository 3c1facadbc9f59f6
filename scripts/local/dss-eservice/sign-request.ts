/**
 * A test e-service's side of the DSS-Ext protocol, written from the specifications (ELN-0609 "DSS Extension
 * for Federated Central Signing Services", ELN-0607 "Implementation Profile for using OASIS DSS in Central
 * Signing Services") and importing nothing of the service: it writes a SignRequest as the schemas define it
 * and has xmlsec1 sign it, and checks SignResponses with xmlsec1 and xmllint. The tests and the demo use it
 * as an e-service would.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const DSS = 'urn:oasis:names:tc:dss:1.0:core:schema';
const CSIG = 'http://id.elegnamnden.se/csig/1.1/dss-ext/ns';
const SAML = 'urn:oasis:names:tc:SAML:2.0:assertion';
const DS = 'http://www.w3.org/2000/09/xmldsig#';
const ENTITY = 'urn:oasis:names:tc:SAML:2.0:nameid-format:entity';

export interface EServiceTask {
  readonly id: string;
  readonly sigType: 'XML' | 'PDF' | 'CMS' | 'ASiC';
  readonly adesType?: 'None' | 'BES' | 'EPES';
  readonly toBeSignedBytes: Buffer;
  readonly adesObject?: { readonly signatureId: string; readonly bytes?: Buffer };
  readonly processingRules?: string;
}

export interface EServiceRequest {
  readonly requestId?: string;
  readonly version?: string;
  readonly requestTime?: Date;
  /** Conditions validity in seconds around the request time (default 180 s). */
  readonly validitySeconds?: number;
  readonly returnUrl: string;
  readonly signer?: ReadonlyArray<{ readonly name: string; readonly value: string }>;
  readonly identityProvider: string;
  readonly signRequester: string;
  readonly signService: string;
  readonly signatureAlgorithm?: string;
  readonly certType?: string;
  readonly loa?: readonly string[];
  readonly requestedCertAttributes?: ReadonlyArray<{
    readonly ref: string;
    readonly samlNames: readonly string[];
    readonly required?: boolean;
    readonly nameType?: 'rdn' | 'san' | 'sda';
  }>;
  readonly signMessage?: {
    readonly text: string;
    readonly mustShow: boolean;
    readonly displayEntity?: string;
  };
  readonly tasks: readonly EServiceTask[];
}

const esc = (value: string): string =>
  value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const iso = (date: Date): string => date.toISOString().replace(/\.\d{3}Z$/, 'Z');

/** A fresh RequestID: 128 random bits, hex (ELN-0607 §2.1). */
export function newRequestId(): string {
  return randomBytes(16).toString('hex');
}

/** The SignRequest with an empty signature template in OptionalInputs, for xmlsec1 to fill. */
export function signRequestTemplate(request: EServiceRequest): string {
  const time = request.requestTime ?? new Date();
  const validity = (request.validitySeconds ?? 180) * 1000;
  const signer =
    request.signer === undefined
      ? ''
      : `<csig:Signer>${request.signer
          .map(
            (a) =>
              `<saml:Attribute Name="${esc(a.name)}"><saml:AttributeValue>${esc(a.value)}</saml:AttributeValue></saml:Attribute>`,
          )
          .join('')}</csig:Signer>`;
  const attributes = (request.requestedCertAttributes ?? [])
    .map(
      (a) =>
        `<csig:RequestedCertAttribute CertAttributeRef="${esc(a.ref)}" CertNameType="${a.nameType ?? 'rdn'}" Required="${a.required ?? true}">` +
        a.samlNames
          .map((n, i) => `<csig:SamlAttributeName Order="${i}">${esc(n)}</csig:SamlAttributeName>`)
          .join('') +
        '</csig:RequestedCertAttribute>',
    )
    .join('');
  const certRequest =
    `<csig:CertRequestProperties CertType="${request.certType ?? 'PKC'}">` +
    (request.loa ?? [])
      .map((l) => `<saml:AuthnContextClassRef>${esc(l)}</saml:AuthnContextClassRef>`)
      .join('') +
    (attributes === '' ? '' : `<csig:RequestedCertAttributes>${attributes}</csig:RequestedCertAttributes>`) +
    '</csig:CertRequestProperties>';
  const signMessage =
    request.signMessage === undefined
      ? ''
      : `<csig:SignMessage MustShow="${request.signMessage.mustShow}"` +
        (request.signMessage.displayEntity === undefined
          ? ''
          : ` DisplayEntity="${esc(request.signMessage.displayEntity)}"`) +
        ` MimeType="text"><csig:Message>${Buffer.from(request.signMessage.text, 'utf8').toString('base64')}</csig:Message></csig:SignMessage>`;
  const extension =
    `<csig:SignRequestExtension${request.version === undefined ? '' : ` Version="${request.version}"`}>` +
    `<csig:RequestTime>${iso(time)}</csig:RequestTime>` +
    `<saml:Conditions NotBefore="${iso(new Date(time.getTime() - 60_000))}" NotOnOrAfter="${iso(new Date(time.getTime() + validity))}">` +
    `<saml:AudienceRestriction><saml:Audience>${esc(request.returnUrl)}</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
    signer +
    `<csig:IdentityProvider Format="${ENTITY}">${esc(request.identityProvider)}</csig:IdentityProvider>` +
    `<csig:SignRequester Format="${ENTITY}">${esc(request.signRequester)}</csig:SignRequester>` +
    `<csig:SignService Format="${ENTITY}">${esc(request.signService)}</csig:SignService>` +
    (request.signatureAlgorithm === undefined
      ? ''
      : `<csig:RequestedSignatureAlgorithm>${esc(request.signatureAlgorithm)}</csig:RequestedSignatureAlgorithm>`) +
    certRequest +
    signMessage +
    '</csig:SignRequestExtension>';
  const tasks = request.tasks
    .map(
      (t) =>
        `<csig:SignTaskData SignTaskId="${esc(t.id)}" SigType="${t.sigType}" AdESType="${t.adesType ?? 'None'}"` +
        (t.processingRules === undefined ? '' : ` ProcessingRules="${esc(t.processingRules)}"`) +
        `><csig:ToBeSignedBytes>${t.toBeSignedBytes.toString('base64')}</csig:ToBeSignedBytes>` +
        (t.adesObject === undefined
          ? ''
          : `<csig:AdESObject><csig:SignatureId>${esc(t.adesObject.signatureId)}</csig:SignatureId>` +
            (t.adesObject.bytes === undefined
              ? ''
              : `<csig:AdESObjectBytes>${t.adesObject.bytes.toString('base64')}</csig:AdESObjectBytes>`) +
            '</csig:AdESObject>') +
        '</csig:SignTaskData>',
    )
    .join('');
  const signatureTemplate =
    `<ds:Signature xmlns:ds="${DS}"><ds:SignedInfo>` +
    '<ds:CanonicalizationMethod Algorithm="http://www.w3.org/2001/10/xml-exc-c14n#"/>' +
    '<ds:SignatureMethod Algorithm="http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"/>' +
    '<ds:Reference URI=""><ds:Transforms><ds:Transform Algorithm="http://www.w3.org/2000/09/xmldsig#enveloped-signature"/>' +
    '<ds:Transform Algorithm="http://www.w3.org/2001/10/xml-exc-c14n#"/></ds:Transforms>' +
    '<ds:DigestMethod Algorithm="http://www.w3.org/2001/04/xmlenc#sha256"/><ds:DigestValue/></ds:Reference>' +
    '</ds:SignedInfo><ds:SignatureValue/><ds:KeyInfo><ds:X509Data/></ds:KeyInfo></ds:Signature>';
  return (
    `<?xml version="1.0" encoding="UTF-8"?><dss:SignRequest xmlns:dss="${DSS}" xmlns:csig="${CSIG}" xmlns:saml="${SAML}"` +
    ` Profile="http://id.elegnamnden.se/csig/1.1/dss-ext/profile" RequestID="${esc(request.requestId ?? newRequestId())}">` +
    `<dss:OptionalInputs>${extension}${signatureTemplate}</dss:OptionalInputs>` +
    `<dss:InputDocuments><dss:Other><csig:SignTasks>${tasks}</csig:SignTasks></dss:Other></dss:InputDocuments>` +
    '</dss:SignRequest>'
  );
}

/** The e-service's request-signing key (PEM private key and certificate). */
export interface EServiceKey {
  readonly keyPem: string;
  readonly certPem: string;
}

function withFiles<T>(fn: (dir: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'dss-eservice-'));
  try {
    return fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Signs the template with xmlsec1 and returns the EidSignRequest form value (base64). */
export function signRequest(template: string, key: EServiceKey): string {
  return withFiles((dir) => {
    writeFileSync(join(dir, 'request.xml'), template);
    writeFileSync(join(dir, 'key.pem'), key.keyPem);
    writeFileSync(join(dir, 'cert.pem'), key.certPem);
    const signed = execFileSync(
      'xmlsec1',
      [
        '--sign',
        '--privkey-pem',
        `${join(dir, 'key.pem')},${join(dir, 'cert.pem')}`,
        join(dir, 'request.xml'),
      ],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
    );
    return Buffer.from(signed, 'utf8').toString('base64');
  });
}

/** Whether xmlsec1 verifies a SignResponse's signature with the service's certificate (PEM). */
export function responseSignatureVerifies(responseXml: string, serviceCertPem: string): boolean {
  return withFiles((dir) => {
    writeFileSync(join(dir, 'response.xml'), responseXml);
    writeFileSync(join(dir, 'cert.pem'), serviceCertPem);
    try {
      execFileSync(
        'xmlsec1',
        ['--verify', '--pubkey-cert-pem', join(dir, 'cert.pem'), join(dir, 'response.xml')],
        {
          stdio: 'pipe',
        },
      );
      return true;
    } catch {
      return false;
    }
  });
}
