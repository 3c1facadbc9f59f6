/**
 * The CSC shapes of eudi-lib-jvm-rqes-csc-kt release 0.8.0 (github.com/eu-digital-identity-wallet/
 * eudi-lib-jvm-rqes-csc-kt, commit b5881df1d405492c0f012b88bb47a0dd15db30ea, "Bump version to
 * 0.8.1-SNAPSHOT" right after the 0.8.0 tag; the release that aligned the library with CSC API v2.2.0.0),
 * transcribed from its source under src/main/kotlin/eu/europa/ec/eudi/rqes/, not from this service.
 * Required: `@Required`, or non-null without a default; optional: nullable or with a default.
 *
 * The library sends no signatures/signDoc: SignDocImpl.signDocument is `TODO("Not implemented yet")`
 * and its README marks signDoc unsupported; so there is no signDoc shape here. SignHashEndpointClient.kt
 * (signHash) and the credentials/list and credentials/info requests are those of its 0.6 line, which
 * scripts/local/runner/tests/support/eudi-rqes.ts holds against the running service.
 */
import { z } from 'zod';

/** internal/http/RSSPMetadataJsonParser.kt, SignAlgorithms. */
const SignAlgorithms = z.object({
  algos: z.array(z.string()),
  algoParams: z.array(z.string().nullable()).nullish(),
});

/** internal/http/RSSPMetadataJsonParser.kt, SignatureFormats. */
const SignatureFormats = z.object({
  formats: z.array(z.string()),
  envelope_properties: z.array(z.array(z.string())).nullish(),
  allowMix: z.boolean().nullish(),
});

/** internal/http/RSSPMetadataJsonParser.kt, OAuth2Server (its init: authType only oauth2code/oauth2client). */
const OAuth2Server = z.object({
  label: z.string().nullish(),
  baseUri: z.string().nullish(),
  issuerIdentifier: z.string().nullish(),
  authType: z.array(z.enum(['oauth2code', 'oauth2client'])),
  supportsRar: z.boolean().nullish(),
});

/** internal/http/RSSPMetadataJsonParser.kt, RSSPMetadataTO: the `info` answer. */
export const RsspMetadata = z.object({
  specs: z.string(),
  name: z.string(),
  // contents(): URI.create(logo) and Locale.forLanguageTag(lang) on the required values.
  logo: z.string(),
  region: z.string(),
  lang: z.string(),
  description: z.string(),
  authType: z.array(z.string()),
  oauth2Servers: z.array(OAuth2Server).nullish(),
  oauth2: z.string().nullish(),
  oauth2Issuer: z.string().nullish(),
  supportsRar: z.boolean().nullish(),
  supportedHashTypes: z.array(z.string()),
  asynchronousOperationMode: z.boolean().nullish(),
  methods: z.array(z.string()),
  validationInfo: z.boolean().nullish(),
  signAlgorithms: SignAlgorithms,
  documentTypes: z.array(z.string()).nullish(),
  signature_formats: SignatureFormats,
  conformance_levels: z.array(z.string()),
});
export type RsspMetadata = z.infer<typeof RsspMetadata>;

/**
 * RSSPMetadataJsonParser.authServerRef, without oauth2Servers: with oauth2code or oauth2client, exactly
 * one of oauth2Issuer and oauth2; its supportsRar decides whether the library sends
 * authorization_details (CSCClientConfig.rarUsage, default RarUsage.IfSupported) or query parameters.
 */
export function authorizationServerOf(info: RsspMetadata): { url: string; supportsRar: boolean } {
  if ((info.oauth2 == null) === (info.oauth2Issuer == null)) {
    throw new Error('issuerClaim or oauth2Claim must be set, not both');
  }
  return { url: (info.oauth2 ?? info.oauth2Issuer)!, supportsRar: info.supportsRar ?? false };
}

/** Types.kt, enum HashType (DocumentDigestTO.hashType is `HashType.valueOf`'d). */
const HashType = z.enum(['SDR', 'DTBSR', 'SODR']);

/** internal/http/TokenEndpointClient.kt, DocumentDigestTO. */
const DocumentDigest = z.object({
  hash: z.string(),
  label: z.string().nullish(),
  hashType: HashType.nullish(),
  circumstantialData: z.string().nullish(),
});

/** internal/http/TokenEndpointClient.kt, AuthorizationDetailTO (numSignatures an Int, required). */
const AuthorizationDetail = z.object({
  type: z.string(),
  credentialID: z.string(),
  numSignatures: z.number().int(),
  documentDigests: z.array(DocumentDigest),
  hashAlgorithmOID: z.string(),
});

/** internal/http/TokenEndpointClient.kt, TokenResponseTO.Success: the oauth2/token answer. */
export const TokenResponse = z.object({
  token_type: z.string().nullish(),
  access_token: z.string(),
  expires_in: z.number().int().nullish(),
  refresh_token: z.string().nullish(),
  credentialID: z.string().nullish(),
  authorization_details: z.array(AuthorizationDetail).nullish(),
});

/** The credential authorization the library asks for (Types.kt, CredentialAuthorizationSubject). */
export interface CredentialAuthorizationSubject {
  readonly credentialID: string;
  /** The hashes' bytes. */
  readonly hashes: readonly Buffer[];
  readonly hashAlgorithmOID: string;
  /** At least 1 (its init). */
  readonly numSignatures: number;
}

/** The client's side of the authorization request: its id, redirect URI, PKCE challenge and state. */
export interface AuthorizationClient {
  readonly clientId: string;
  readonly redirectUri: string;
  readonly codeChallenge: string;
  readonly state: string;
}

/**
 * internal/http/AuthorizationEndpointClient.kt, prepareAuthRequest: Nimbus's AuthorizationRequest
 * parameters (AuthorizeCredentialImpl asks for scope `credential`; prompt `login`).
 */
function authorizationRequest(client: AuthorizationClient): Record<string, string> {
  return {
    response_type: 'code',
    client_id: client.clientId,
    redirect_uri: client.redirectUri,
    scope: 'credential',
    code_challenge: client.codeChallenge,
    code_challenge_method: 'S256',
    state: client.state,
    prompt: 'login',
  };
}

/** prepareAuthRequest with PassByScope (the server does not advertise supportsRar): custom parameters. */
export function authorizationByScope(
  subject: CredentialAuthorizationSubject,
  client: AuthorizationClient,
): Record<string, string> {
  return {
    ...authorizationRequest(client),
    credentialID: subject.credentialID,
    hashes: subject.hashes.map((h) => h.toString('base64url')).join(','),
    hashAlgorithmOID: subject.hashAlgorithmOID,
    numSignatures: String(subject.numSignatures),
  };
}

/**
 * prepareAuthRequest with PassByAuthorizationDetails (the server advertises supportsRar), the entry as
 * internal/AuthorizationDetailsOps.kt, toNimbusAuthDetail builds it: the CSC v2.2 type URI,
 * numSignatures, each digest with a `label` (put even when null) and `hashType` DTBSR, hashes in
 * standard base64 (Digest.asBase64).
 */
export function authorizationByDetails(
  subject: CredentialAuthorizationSubject,
  client: AuthorizationClient,
): Record<string, string> {
  const entry = {
    type: 'https://cloudsignatureconsortium.org/2025/credential',
    numSignatures: subject.numSignatures,
    credentialID: subject.credentialID,
    documentDigests: subject.hashes.map((h) => ({
      hash: h.toString('base64'),
      label: null,
      hashType: 'DTBSR',
    })),
    hashAlgorithmOID: subject.hashAlgorithmOID,
  };
  return { ...authorizationRequest(client), authorization_details: JSON.stringify([entry]) };
}
