import type { AwsConfig, IdentityConfig, JwksSource } from '@pipeline/config';
import { SsmParameterStore } from '@pipeline/adapters/parameters';
import { RefreshingJwks } from './jwks';
import { jwksFetcher } from './sources';
import { JwsAssertionVerifier } from './verifier';

/** Longest identityAssertion accepted (the API's schema says the same). */
export const MAX_ASSERTION_LENGTH = 8192;

/** The verifier for the configured trusted issuers; one parameter store, made only if a source needs it. */
export function createAssertionVerifier(config: IdentityConfig, aws: AwsConfig): JwsAssertionVerifier {
  let ssm: SsmParameterStore | undefined;
  // RefreshingJwks decides when to read again, so the store keeps no values of its own.
  const parameters = (): SsmParameterStore => (ssm ??= SsmParameterStore.create(aws, { maxAgeSeconds: 0 }));
  const keySet = (source: JwksSource): RefreshingJwks =>
    new RefreshingJwks(jwksFetcher(source, parameters), {
      refreshIntervalMs: config.jwksRefreshIntervalSeconds * 1000,
      maxAgeMs: config.jwksMaxAgeSeconds * 1000,
    });
  return new JwsAssertionVerifier({
    issuers: new Map(config.issuers.map((trusted) => [trusted.issuer, keySet(trusted.jwks)])),
    clients: new Map(config.clientKeys.map((client) => [client.client, keySet(client.jwks)])),
    algorithms: config.algorithms,
    policy: {
      audience: config.clientId,
      clockSkewSeconds: config.clockSkewSeconds,
      maxAuthAgeSeconds: config.maxAuthAgeSeconds,
      acceptedAcr: config.acceptedAcr,
      maxLifetimeSeconds: config.maxLifetimeSeconds,
      maxAuthGapSeconds: config.maxAuthGapSeconds,
    },
    mapping: config.claimMapping,
    maxLength: MAX_ASSERTION_LENGTH,
  });
}
