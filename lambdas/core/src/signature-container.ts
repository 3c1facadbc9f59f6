import type { DigestAlgorithm, SignatureAlgorithm } from './algorithms';
import type { AdesProfile } from './sign-request';

/** What a signature container is built from, once the one-time key's certificate exists. */
export interface ContainerInput {
  readonly profile: AdesProfile;
  readonly digestAlgorithm: DigestAlgorithm;
  readonly signatureAlgorithm: SignatureAlgorithm;
  /** The client's digest of the signed content. */
  readonly messageDigest: Buffer;
  readonly certificatePem: string;
  /** Issuing CA, then root (the container carries the issuing CA; the root stays the relying party's). */
  readonly chainPem: readonly string[];
  readonly signingTime: Date;
}

export interface PreparedContainer {
  /** The digest the one-time key signs (of the container's signed attributes). */
  readonly toBeSigned: Buffer;
  /** The container (DER) around the key's signature of `toBeSigned`. */
  finish(signature: Buffer): Buffer;
}

/** Builds AdES containers (implemented by lambdas/pki with the CMS schemas). */
export type ContainerBuilder = (input: ContainerInput) => PreparedContainer;
