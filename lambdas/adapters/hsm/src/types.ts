import type { HsmProfileName } from '@pipeline/config';

export interface HsmOptions {
  readonly modulePath: string;
  readonly tokenLabel: string;
  /** Resolved PIN (CloudHSM: "<user>:<password>"). Kept only inside the adapter, never logged. */
  readonly pin: string;
  readonly profile: HsmProfileName;
  /** Sessions kept open for concurrent operations (each PKCS#11 session runs one operation at a time). */
  readonly sessionPoolSize: number;
}

// The port the adapter implements, and the types it speaks, are the core's.
export type {
  GenerateOptions,
  GeneratedKeyPair,
  Hsm,
  KeyAttributes,
  PrivateKeyRef,
  SignOptions,
} from '@pipeline/core/shared';
