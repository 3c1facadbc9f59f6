import type { AwsConfig, DssExtConfig, IdentityConfig } from '@pipeline/config';
import { MAX_DOCUMENTS } from '@pipeline/core/identity';
import type { DssServiceContext } from '@pipeline/dss';
import { readSecretText } from '@pipeline/adapters/parameters';
import { DssEvidenceVerifier } from './evidence-verifier';
import { readFederationMetadata, type IdentityProviderEntry } from './metadata';

/** How long a read of the federation's metadata serves before it is read (and its signature checked) again. */
const METADATA_MAX_AGE_MS = 10 * 60_000;

/**
 * The federation's identity providers from DSSEXT_FEDERATION_METADATA, verified with the operator's
 * certificates, read again after METADATA_MAX_AGE_MS; a failed read keeps the last good one.
 */
export function federationOf(
  config: DssExtConfig,
  aws: AwsConfig,
): () => Promise<ReadonlyMap<string, IdentityProviderEntry>> {
  let last: { at: number; providers: ReadonlyMap<string, IdentityProviderEntry> } | undefined;
  return async () => {
    const now = Date.now();
    if (last && now - last.at < METADATA_MAX_AGE_MS) return last.providers;
    try {
      const xml = await readSecretText(config.federationMetadata, 'DSSEXT_FEDERATION_METADATA', aws);
      last = { at: now, providers: readFederationMetadata(xml, config.metadataTrust) };
    } catch (err) {
      if (!last) throw err;
    }
    return last.providers;
  };
}

/** The service's side of a SignRequest's checks, from the DSS-Ext settings (the door and the verifier alike). */
export function dssServiceOf(config: DssExtConfig): Omit<DssServiceContext, 'now'> {
  return {
    signServiceEntityId: config.signServiceEntityId,
    registrations: config.clients,
    maxRequestAgeMs: config.maxRequestAgeSeconds * 1000,
    clockSkewMs: config.clockSkewSeconds * 1000,
    maxTasks: MAX_DOCUMENTS,
  };
}

/** The verifier of DSS-Ext evidence (the SignRequest and the assertion) as the API and the CA run it. */
export function createDssEvidenceVerifier(
  config: DssExtConfig,
  identity: IdentityConfig,
  identityProviders: () => Promise<ReadonlyMap<string, IdentityProviderEntry>>,
): DssEvidenceVerifier {
  return new DssEvidenceVerifier({
    service: dssServiceOf(config),
    identityProviders,
    sp: config.sp,
    defaultLoa: config.defaultLoa,
    maxAuthAgeSeconds: identity.maxAuthAgeSeconds,
  });
}
