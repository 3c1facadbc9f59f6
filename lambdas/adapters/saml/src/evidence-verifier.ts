/**
 * The AssertionVerifier of DSS-Ext requests, which the API and the CA hold (through EvidenceVerifier):
 * the evidence is the e-service's signed SignRequest and the identity provider's signed assertion
 * (core identity/dss-evidence.ts). Everything is verified here, from those two documents and the binding
 * nonce the caller computed from what is about to be signed:
 *  1. the SignRequest is signed by a registered e-service (its time window was the door's rule at arrival);
 *  2. the pipeline request it makes (request id, key type, scheme, tasks) has exactly the caller's nonce;
 *  3. the assertion is signed by the identity provider the SignRequest named, in the federation metadata,
 *     and answers the AuthnRequest derived from that nonce and SignRequest (InResponseTo), at our SP, with a
 *     login forced for this request at a requested level of assurance, for the person the SignRequest names
 *     (Signer), attesting its sign message, and for a qualified request with a SAD for it;
 *  4. the certificate subject comes from the assertion's attributes as the SignRequest's
 *     RequestedCertAttributes map them (the profile's five fields).
 */
import { createHash } from 'node:crypto';
import {
  AssertionError,
  assertionNonce,
  authnRequestId,
  checkSamlAssertion,
  checkSamlValidity,
  checkSignerAttributes,
  checkSignMessageDigest,
  claimSources,
  decodeDssEvidence,
  sadRequestId,
  signerFromClaims,
  type AssertionVerifier,
  type ClaimMapping,
  type SamlAssertionFacts,
  type VerifiedAssertion,
  type VerifyOptions,
} from '@pipeline/core/identity';
import {
  pipelineRequestOf,
  readSignRequest,
  taskDocuments,
  type DssServiceContext,
  type SignRequest,
} from '@pipeline/dss';
import { verifySamlAssertion } from './assertion';
import type { IdentityProviderEntry } from './metadata';
import { verifySad } from './sad';

/** personalIdentityNumber (ELN-0604): the SAD's user id attribute and the default serialNumber source. */
export const PERSONAL_IDENTITY_NUMBER = 'urn:oid:1.2.752.29.4.13';

/** The Swedish eID framework's attributes for the profile's fields, when the SignRequest asks for none. */
const DEFAULT_MAPPING: ClaimMapping = {
  givenName: 'urn:oid:2.5.4.42',
  surname: 'urn:oid:2.5.4.4',
  commonName: 'urn:oid:2.16.840.1.113730.3.1.241',
  serialNumber: PERSONAL_IDENTITY_NUMBER,
  serialNumberPrefix: '',
  country: { value: 'SE' },
};

export interface DssEvidenceConfig {
  readonly service: Omit<DssServiceContext, 'now'>;
  readonly identityProviders: () => Promise<ReadonlyMap<string, IdentityProviderEntry>>;
  /** Our SP: the assertion's audience and recipient. */
  readonly sp: { readonly entityId: string; readonly acsUrl: string };
  /** The levels of assurance accepted when the SignRequest names none. */
  readonly defaultLoa: readonly string[];
  /** At the API (no maxAgeSeconds): the login may be this old. */
  readonly maxAuthAgeSeconds: number;
  readonly now?: () => number;
}

export class DssEvidenceVerifier implements AssertionVerifier {
  public constructor(private readonly config: DssEvidenceConfig) {}

  public async verify(
    token: string,
    expectedNonce: string,
    options: VerifyOptions = {},
  ): Promise<VerifiedAssertion> {
    const now = (this.config.now ?? Date.now)();
    const evidence = decodeDssEvidence(token);
    if (evidence === undefined)
      throw new AssertionError('ASSERTION_MALFORMED', 'the DSS-Ext evidence is malformed');
    const request = this.signRequestOf(evidence.signRequest, now);
    const pipeline = pipelineRequestOf(request);
    const nonce = assertionNonce({
      requestId: pipeline.requestId,
      keyType: pipeline.keyType,
      signatureAlgorithm: pipeline.signatureAlgorithm,
      documents: taskDocuments(pipeline),
    });
    if (nonce !== expectedNonce) {
      throw new AssertionError(
        'ASSERTION_BINDING_MISMATCH',
        'the SignRequest does not make the request being signed',
      );
    }
    const identityProviders = await this.config.identityProviders();
    const facts = verifySamlAssertion(evidence.assertion.toString('utf8'), identityProviders);
    const inResponseTo = authnRequestId(nonce, evidence.signRequest);
    const skew = this.config.service.clockSkewMs;
    checkSamlAssertion(facts, {
      issuer: request.identityProvider,
      inResponseTo,
      audience: this.config.sp.entityId,
      recipient: this.config.sp.acsUrl,
      acceptedLoa:
        request.authnContextClassRefs.length > 0 ? request.authnContextClassRefs : this.config.defaultLoa,
      requestedAt: request.requestTime.getTime(),
      now,
      clockSkewMs: skew,
      maxAgeMs: (options.maxAgeSeconds ?? this.config.maxAuthAgeSeconds) * 1000,
    });
    // Where the assertion is consumed (the API, at once) it must still be valid; the CA bounds its age.
    if (options.maxAgeSeconds === undefined) checkSamlValidity(facts, now, skew);
    checkSignerAttributes(request.signer, facts);
    checkSignMessageDigest(facts, request.signMessage);
    if (request.certType === 'QC/SSCD') {
      await verifySad(facts, identityProviders.get(facts.issuer)!, {
        audience: this.config.sp.entityId,
        sadRequestId: sadRequestId(inResponseTo),
        signRequestId: request.requestId,
        docCount: request.tasks.length,
        userIdAttribute: PERSONAL_IDENTITY_NUMBER,
        now,
        clockSkewMs: skew,
      });
    }
    return verifiedOf(
      facts,
      request,
      this.config.sp.entityId,
      options.maxAgeSeconds ?? this.config.maxAuthAgeSeconds,
    );
  }

  private signRequestOf(octets: Buffer, now: number): SignRequest {
    let read;
    try {
      read = readSignRequest(
        octets.toString('base64'),
        { ...this.config.service, now: new Date(now) },
        { timeWindow: false },
      );
    } catch {
      throw new AssertionError(
        'CLIENT_NOT_TRUSTED',
        'the SignRequest is not signed by a registered e-service',
      );
    }
    if (read.kind === 'refused') {
      throw new AssertionError(
        'ASSERTION_CLAIMS_INVALID',
        `the SignRequest breaks a rule: ${read.refusal.message}`,
      );
    }
    return read.request;
  }
}

/** The signer, the evidence and the authentication context of a verified assertion. */
function verifiedOf(
  facts: SamlAssertionFacts,
  request: SignRequest,
  serviceId: string,
  maxAgeSeconds: number,
): VerifiedAssertion {
  const payload = Object.fromEntries(facts.attributes.map((a) => [a.name, a.values[0]]));
  const mapping = mappingOf(request, payload);
  const signer = signerFromClaims(payload, mapping);
  const assertionHash = createHash('sha256').update(`${facts.issuer}\n${facts.id}`).digest('hex');
  return {
    signer,
    evidence: {
      source: 'assertion',
      issuer: facts.issuer,
      subject: `saml-assertion:${facts.id}`,
      assertionHash,
      acr: facts.authnContextClassRef,
      authTime: facts.authnInstant,
    },
    // The assertion's issuer and ID: an identity provider issues an ID once.
    replayKey: assertionHash,
    expiresAt: Math.max(facts.notOnOrAfter ?? 0, facts.authnInstant + maxAgeSeconds * 1000),
    issuedAt: facts.issueInstant,
    authContext: {
      identityProvider: facts.issuer,
      authenticationInstant: facts.authnInstant,
      authnContextClassRef: facts.authnContextClassRef,
      assertionRef: facts.id,
      serviceId,
      attributes: claimSources(payload, mapping),
    },
  };
}

/**
 * The attribute each profile field comes from: the first of a RequestedCertAttribute's SAML attributes the
 * assertion carries (lowest Order first), else the framework's default attribute.
 */
function mappingOf(request: SignRequest, payload: Readonly<Record<string, unknown>>): ClaimMapping {
  const requested = (oid: string): string | undefined =>
    request.requestedCertAttributes
      .find((a) => a.certNameType === 'rdn' && a.certAttributeRef === oid)
      ?.samlAttributeNames.map((n) => n.name)
      .find((name) => payload[name] !== undefined);
  const country = requested('2.5.4.6');
  return {
    givenName: requested('2.5.4.42') ?? DEFAULT_MAPPING.givenName,
    surname: requested('2.5.4.4') ?? DEFAULT_MAPPING.surname,
    commonName: requested('2.5.4.3') ?? DEFAULT_MAPPING.commonName,
    serialNumber: requested('2.5.4.5') ?? DEFAULT_MAPPING.serialNumber,
    serialNumberPrefix: '',
    country: country === undefined ? DEFAULT_MAPPING.country : { claim: country },
  };
}
