/** The DSS-Ext SignRequest as the door and the CA read it, and an e-service's registration. */
import type { X509Certificate } from 'node:crypto';

export type CertType = 'PKC' | 'QC' | 'QC/SSCD';
export type SigType = 'XML' | 'PDF' | 'CMS';
export type AdesType = 'None' | 'BES' | 'EPES';

/** A SAML attribute with its values (Signer, and the assertion's attributes). */
export interface SamlAttribute {
  readonly name: string;
  readonly values: readonly string[];
}

/** One RequestedCertAttribute: a certificate field and the SAML attributes that may fill it. */
export interface RequestedCertAttribute {
  /** An OID (rdn, sda) or a GeneralName tag number (san). */
  readonly certAttributeRef: string;
  readonly certNameType: 'rdn' | 'san' | 'sda';
  readonly friendlyName?: string;
  readonly defaultValue?: string;
  readonly required: boolean;
  /** Lowest order first: the first one the assertion has fills the field. */
  readonly samlAttributeNames: readonly { readonly name: string; readonly order: number }[];
}

export interface SignMessage {
  readonly mustShow: boolean;
  readonly displayEntity?: string;
  readonly mimeType: 'text' | 'text/html' | 'text/markdown';
  /** The message's UTF-8 octets (csig:Message); absent when it is encrypted to the identity provider. */
  readonly message?: Buffer;
  readonly encrypted: boolean;
  /** The csig:SignMessage element as signed, passed on to the identity provider unchanged. */
  readonly xml: string;
}

export interface SignTask {
  readonly signTaskId?: string;
  readonly sigType: SigType;
  readonly adesType: AdesType;
  readonly toBeSignedBytes: Buffer;
  readonly adesObject?: { readonly signatureId?: string; readonly bytes?: Buffer };
}

export interface SignRequest {
  readonly requestId: string;
  /** SignRequestExtension/@Version, echoed in the response. */
  readonly version: string;
  readonly requestTime: Date;
  readonly conditions: { readonly notBefore?: Date; readonly notOnOrAfter?: Date; readonly audience: string };
  readonly signer: readonly SamlAttribute[];
  readonly identityProvider: string;
  readonly signRequester: string;
  readonly signService: string;
  readonly signatureAlgorithm: string;
  readonly certType: CertType;
  readonly authnContextClassRefs: readonly string[];
  readonly requestedCertAttributes: readonly RequestedCertAttribute[];
  readonly signMessage?: SignMessage;
  readonly tasks: readonly SignTask[];
}

/** What an e-service registers once (docs/dss-ext.md). */
export interface DssClientRegistration {
  /** Its SignRequester entityID. */
  readonly entityId: string;
  /** The certificates whose keys may sign its requests. */
  readonly certificates: readonly X509Certificate[];
  /** The only addresses a SignResponse is posted to (the request's Audience must be one). */
  readonly returnUrls: readonly string[];
  /** Levels of assurance it may ask for; empty means any the service accepts. */
  readonly acceptedLoa: readonly string[];
  readonly certTypes: readonly CertType[];
  /** Whether the SignResponse carries the assertion itself (SignerAssertionInfo/SamlAssertions). */
  readonly includeAssertion: boolean;
}

/** The service's side of the checks. */
export interface DssServiceContext {
  /** Our SignService entityID: a request for another service is refused. */
  readonly signServiceEntityId: string;
  readonly registrations: readonly DssClientRegistration[];
  readonly now: Date;
  /** RequestTime may be this old (ELN-0607 recommends at most 180 s)... */
  readonly maxRequestAgeMs: number;
  /** ...give or take this much clock difference. */
  readonly clockSkewMs: number;
  /** At most this many sign tasks per request. */
  readonly maxTasks: number;
}
