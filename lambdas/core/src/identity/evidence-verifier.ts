import { isDssEvidence } from './dss-evidence';
import type { AssertionVerifier, VerifiedAssertion, VerifyOptions } from './types';

/**
 * The one verifier the API and the CA hold: a DSS-Ext token (dss-evidence.ts) goes to the SAML evidence
 * verifier, anything else (an ID token, a request object) to the JWS verifier. Without a SAML verifier a
 * DSS-Ext token is refused like any malformed assertion.
 */
export class EvidenceVerifier implements AssertionVerifier {
  public constructor(
    private readonly jws: AssertionVerifier,
    private readonly dss?: AssertionVerifier,
  ) {}

  public verify(token: string, expectedNonce: string, options?: VerifyOptions): Promise<VerifiedAssertion> {
    const verifier = isDssEvidence(token) && this.dss ? this.dss : this.jws;
    return verifier.verify(token, expectedNonce, options);
  }
}
