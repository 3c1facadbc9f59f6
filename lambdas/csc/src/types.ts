import type { ReadCall, ReadOutcome, SubmitCall, SubmitOutcome } from '@pipeline/api';
import type { CscClient, CscLifetimes, CscServiceDescription, CscStore } from '@pipeline/core/csc';
import type { AssertionVerifier } from '@pipeline/core/identity';
import type { DigestAlgorithm } from '@pipeline/core/shared';
import type { DoorLog, IdentityProviderLogin } from '@pipeline/doors';

/** The CSC door's settings (CscConfig of @pipeline/config has them). */
export interface CscSettings {
  readonly service: CscServiceDescription;
  /** The registered CSC clients (OAuth 2.0 confidential clients). */
  readonly clients: readonly CscClient[];
  readonly lifetimes: CscLifetimes;
  /** How long signatures/signHash waits for the pipeline's result (operation mode S). */
  readonly signWaitSeconds: number;
}

/** The pipeline's intake as the door calls it (@pipeline/api's submit and read, bound to their deps). */
export interface Intake {
  submit(call: SubmitCall): Promise<SubmitOutcome>;
  read(call: ReadCall): Promise<ReadOutcome>;
}

export interface CscDoorDeps {
  readonly config: CscSettings;
  /** The door's state: flows, pushed requests, codes, access tokens, pending responses. */
  readonly store: CscStore;
  /** Verifies the identity assertion of a login, as the API and the CA verify it. */
  readonly verifier: AssertionVerifier;
  /** The identity provider the citizens log in at. */
  readonly login: IdentityProviderLogin;
  readonly intake: Intake;
  /** The service's TSA (as the signer reaches it): an RFC 3161 token over a client's hash. */
  readonly timeStamper: {
    timeStampHash(hash: Buffer, algorithm: DigestAlgorithm, nonce?: Buffer): Promise<Buffer>;
  };
  readonly logger: DoorLog;
  /** Epoch ms (tests move it). */
  readonly now?: () => number;
}
