/**
 * The one verifier of identity evidence the API, the CA and the doors hold (core EvidenceVerifier): ID
 * tokens and request objects through the trusted issuers' keys; DSS-Ext evidence, when the door is
 * deployed, through its registrations and the federation's metadata.
 */
import type { AwsConfig, IdentityConfig } from '@pipeline/config';
import { EvidenceVerifier } from '@pipeline/core/identity';
import { createAssertionVerifier } from '@pipeline/adapters/oidc';
import { createDssEvidenceVerifier, federationOf } from '@pipeline/adapters/saml';

export function createEvidenceVerifier(identity: IdentityConfig, aws: AwsConfig): EvidenceVerifier {
  const { dssExt } = identity;
  return new EvidenceVerifier(
    createAssertionVerifier(identity, aws),
    dssExt ? createDssEvidenceVerifier(dssExt, identity, federationOf(dssExt, aws)) : undefined,
  );
}
