import {
  createLocalJWKSet,
  type CryptoKey,
  type FlattenedJWSInput,
  type JSONWebKeySet,
  type JWSHeaderParameters,
} from 'jose';
import { IdentityProviderUnavailableError } from '@pipeline/core/identity';

/** Reads an issuer's current JSON Web Key Set (over HTTPS, from a parameter, from a file). */
export type JwksFetcher = () => Promise<unknown>;

export interface RefreshingJwksOptions {
  /** A key id the set does not hold triggers at most one refetch per this interval. */
  readonly refreshIntervalMs: number;
  /** The set is fetched again when older than this (rotation without an unknown kid). */
  readonly maxAgeMs: number;
  readonly clock?: () => number;
}

type KeyResolver = ReturnType<typeof createLocalJWKSet>;

const NO_MATCHING_KEY = 'ERR_JWKS_NO_MATCHING_KEY';

/**
 * An issuer's signing keys, cached per process. Rotation is followed two ways: the set is re-read when it
 * is older than `maxAgeMs`, and a token whose `kid` the set lacks makes it re-read at once, but at most
 * once per `refreshIntervalMs`, so a flood of tokens with invented key ids costs one fetch per interval.
 * A failed re-read keeps serving the keys it has; only a process that never got the set reports the
 * identity provider unavailable.
 */
export class RefreshingJwks {
  private current: { readonly resolve: KeyResolver; readonly fetchedAt: number } | undefined;
  private lastAttempt = Number.NEGATIVE_INFINITY;
  private inflight: Promise<KeyResolver> | undefined;
  private readonly clock: () => number;

  public constructor(
    private readonly fetchJwks: JwksFetcher,
    private readonly options: RefreshingJwksOptions,
  ) {
    this.clock = options.clock ?? Date.now;
  }

  /** A jose key resolver: the public key for the token's header (`kid`, `alg`). */
  public readonly resolve = async (
    header: JWSHeaderParameters,
    token: FlattenedJWSInput,
  ): Promise<CryptoKey> => {
    const mayRefetch = (): boolean => this.clock() - this.lastAttempt >= this.options.refreshIntervalMs;
    const current = this.current;
    const fresh = current && this.clock() - current.fetchedAt <= this.options.maxAgeMs;
    if (!current || (!fresh && mayRefetch())) return (await this.refresh())(header, token);
    try {
      return await current.resolve(header, token);
    } catch (err) {
      const unknownKid = (err as { code?: unknown }).code === NO_MATCHING_KEY;
      if (!unknownKid || !mayRefetch()) throw err;
      return (await this.refresh())(header, token);
    }
  };

  private refresh(): Promise<KeyResolver> {
    this.inflight ??= this.load().finally(() => (this.inflight = undefined));
    return this.inflight;
  }

  private async load(): Promise<KeyResolver> {
    this.lastAttempt = this.clock();
    try {
      const resolve = createLocalJWKSet(publicSigningKeys(await this.fetchJwks()));
      this.current = { resolve, fetchedAt: this.clock() };
      return resolve;
    } catch (err) {
      if (this.current) return this.current.resolve;
      throw new IdentityProviderUnavailableError(
        `the identity provider's keys could not be read (${(err as Error)?.name ?? 'error'})`,
      );
    }
  }
}

/**
 * The signature-verification keys of a JWKS document: RSA and EC public keys whose use (if stated) is
 * `sig`. A set that publishes private key material is refused whole: that issuer is misconfigured.
 */
export function publicSigningKeys(document: unknown): JSONWebKeySet {
  const keys = (document as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) throw new TypeError('not a JWKS document');
  const usable = keys.filter((key): key is Record<string, unknown> => {
    if (!key || typeof key !== 'object') return false;
    const k = key as Record<string, unknown>;
    if (['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'].some((member) => member in k)) {
      throw new TypeError('the JWKS holds private or symmetric key material');
    }
    return (k.kty === 'RSA' || k.kty === 'EC') && (k.use === undefined || k.use === 'sig');
  });
  return { keys: usable as unknown as JSONWebKeySet['keys'] };
}
