import type { ReadCall, ReadOutcome, SubmitCall, SubmitOutcome } from '@pipeline/api';
import type { SamlAssertionFacts } from '@pipeline/core/identity';
import type { DoorLog } from '@pipeline/doors';
import type { DssServiceContext } from '@pipeline/dss';
import type { XmlSigner } from '@pipeline/xml';

/** The pipeline's intake as the door calls it (@pipeline/api's submit and read, bound to their deps). */
export interface Intake {
  submit(call: SubmitCall): Promise<SubmitOutcome>;
  read(call: ReadCall): Promise<ReadOutcome>;
}

/** A citizen's login for one SignRequest: only the posted SignRequest, which the door verifies again. */
export interface DssFlow {
  /** The SignRequest as posted (base64). */
  readonly signRequest: string;
  /** The verified assertion (its XML, base64) once the identity provider answered. */
  readonly assertion?: string;
  /** Epoch seconds. */
  readonly expiresAt: number;
}

/** The door's state (TABLES.dssExt); nothing in it is trusted by the CA. */
export interface DssExtStore {
  /** Registers a SignRequest (by the hash of its SignRequester and RequestID) once: false when seen before. */
  registerRequest(key: string, expiresAt: number): Promise<boolean>;
  putFlow(flowId: string, flow: DssFlow): Promise<void>;
  /** Records the login's assertion once (the ACS): undefined when there is no such login or it was answered. */
  answerFlow(flowId: string, assertion: string, nowSeconds: number): Promise<DssFlow | undefined>;
  /** An answered login, for its result. */
  getFlow(flowId: string, nowSeconds: number): Promise<DssFlow | undefined>;
}

export type LoginRefusal = 'cancel' | 'fraud' | 'unknown-principal' | 'no-authn-context' | 'failed';

/** The door's SAML service provider in the federation (adapters/saml's SamlServiceProvider). */
export interface SamlLogin {
  identityProvider(entityId: string): Promise<
    | {
        readonly assuranceCertifications: readonly string[];
        readonly principalSelection: readonly string[];
      }
    | undefined
  >;
  authnRequestForm(input: {
    readonly id: string;
    readonly issueInstant: Date;
    readonly idp: string;
    readonly loa: readonly string[];
    readonly requesterId: string;
    readonly signMessageXml?: string;
    readonly principalSelection?: readonly { readonly name: string; readonly value: string }[];
    readonly sadRequest?: { readonly id: string; readonly signRequestId: string; readonly docCount: number };
    readonly relayState: string;
  }): Promise<PostForm>;
  /** Throws an AssertionError for a forged or misdirected answer. */
  readResponse(
    encoded: string,
    expected: { readonly issuer: string; readonly inResponseTo: string },
  ): Promise<
    | { readonly kind: 'assertion'; readonly assertionXml: string; readonly facts: SamlAssertionFacts }
    | { readonly kind: 'refused'; readonly reason: LoginRefusal }
  >;
  /** A stored assertion verified again (its signature, the federation): what it states. */
  assertionFacts(assertionXml: string): Promise<SamlAssertionFacts>;
  metadataXml(): string;
}

export interface PostForm {
  readonly action: string;
  readonly fields: Readonly<Record<string, string>>;
}

export interface DssExtSettings {
  /** The door's public base URL (`.../dss/v1`). */
  readonly baseUrl: string;
  readonly service: Omit<DssServiceContext, 'now'>;
  /** Our SP entityID: the SignerAssertionInfo's ServiceID. */
  readonly spEntityId: string;
  readonly defaultLoa: readonly string[];
  readonly flowSeconds: number;
}

export interface DssExtDoorDeps {
  readonly config: DssExtSettings;
  readonly store: DssExtStore;
  readonly login: SamlLogin;
  readonly intake: Intake;
  /** Signs our SignResponses (the service key). */
  readonly responseSigner: XmlSigner;
  readonly logger: DoorLog;
  /** Epoch ms (tests move it). */
  readonly now?: () => number;
}
