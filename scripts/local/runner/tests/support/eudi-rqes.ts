/**
 * The CSC shapes of the EU's reference rQES client, eudi-lib-jvm-rqes-csc-kt, transcribed from its source
 * (github.com/niscy-eudiw/eudi-lib-jvm-rqes-csc-kt at 23af159e / 0aedbe13 / 57d901cf / 42b36926, package
 * eu.europa.ec.eudi.rqes): what it sends, as its kotlinx serializers encode it (`encodeDefaults = true`:
 * defaults and nulls are sent), and what it requires of the answers (`@Required` keys, non-null fields
 * without default, and what its `toDomain` mappings throw on). Nothing here is taken from this service.
 */
import { z } from 'zod';

/** internal/http/RSSPMetadataJsonParser.kt, RSSPMetadataTO: `info`. */
export const RsspMetadata = z.object({
  specs: z.string().nullish(),
  name: z.string().nullish(),
  logo: z.string().nullish(),
  region: z.string().nullish(),
  lang: z.string().nullish(),
  description: z.string().nullish(),
  authType: z.array(z.string()),
  oauth2: z.string().nullish(),
  oauth2Issuer: z.string().nullish(),
  asynchronousOperationMode: z.boolean().nullish(),
  methods: z.array(z.string()),
  validationInfo: z.boolean().nullish(),
  signAlgorithms: z.object({
    algos: z.array(z.string()),
    algoParams: z.array(z.string().nullable()).nullish(),
  }),
  signature_formats: z.object({
    formats: z.array(z.string()),
    envelope_properties: z.array(z.array(z.string())).nullish(),
    allowMix: z.boolean().nullish(),
  }),
  conformance_levels: z.array(z.string()).nullish(),
});

/** RSSPMetadataJsonParser.authServerRef: with oauth2code, exactly one of oauth2Issuer and oauth2. */
export function authorizationServerOf(info: z.infer<typeof RsspMetadata>): string {
  if ((info.oauth2 == null) === (info.oauth2Issuer == null)) {
    throw new Error('one of oauth2Issuer or oauth2 is expected, not both');
  }
  return (info.oauth2 ?? info.oauth2Issuer)!;
}

/** toAuthorizationMode / toCredentialKeyStatus / toCertificateStatus: the values it knows. */
const AuthMode = z.enum(['explicit', 'oauth2code']);

/** CredentialAuthTO: `mode` and `objects` are @Required (objects may be null, but the key is there). */
const CredentialAuth = z.object({
  mode: AuthMode,
  expression: z.string().nullish(),
  objects: z.array(z.unknown()).nullable(),
});

/** CredentialKeyTO. */
const CredentialKey = z.object({
  status: z.enum(['enabled', 'disabled']),
  algo: z.array(z.string()),
  len: z.number().int(),
  curve: z.string().nullish(),
});

const GENERALIZED_TIME = /^\d{14}Z$/;

/**
 * CredentialKeyCertificateTO / CredentialListCertificateTO: all optional, but toDomain builds
 * `X500Principal(issuerDN)` and `X500Principal(subjectDN)` (a null name throws) and parses validFrom and
 * validTo with `yyyyMMddHHmmssX`.
 */
const CredentialCertificate = z.object({
  status: z.enum(['valid', 'expired', 'revoked', 'suspended']).nullish(),
  certificates: z.array(z.string()).nullish(),
  issuerDN: z.string().min(1),
  serialNumber: z.string().nullish(),
  subjectDN: z.string().min(1),
  validFrom: z.string().regex(GENERALIZED_TIME).nullish(),
  validTo: z.string().regex(GENERALIZED_TIME).nullish(),
});

/** CredentialInfoTO.Success (credentials/info); `multisign` an Int, `SCAL` a string. */
export const CredentialInfo = z.object({
  description: z.string().nullish(),
  signatureQualifier: z.string().nullish(),
  key: CredentialKey,
  cert: CredentialCertificate,
  auth: CredentialAuth,
  SCAL: z.string().nullish(),
  multisign: z.number().int(),
  lang: z.string().nullish(),
});

/** CredentialsListTO.Success with ListCredentialInfoTO. */
export const CredentialsList = z.object({
  credentialIDs: z.array(z.string()),
  credentialInfos: z.array(CredentialInfo.extend({ credentialID: z.string() })).nullish(),
  onlyValid: z.boolean().nullish(),
});

/** TokenEndpointClient.kt, TokenResponseTO.Success with AuthorizationDetailTO and DocumentDigestTO. */
export const TokenResponse = z.object({
  token_type: z.string().nullish(),
  access_token: z.string(),
  expires_in: z.number().int().nullish(),
  refresh_token: z.string().nullish(),
  credentialID: z.string().nullish(),
  authorization_details: z
    .array(
      z.object({
        type: z.string(),
        credentialID: z.string(),
        numSignatures: z.number().int(),
        documentDigests: z.array(
          z.object({ hash: z.string(), label: z.string().nullish(), hashType: z.string().nullish() }),
        ),
        hashAlgorithmOID: z.string(),
      }),
    )
    .nullish(),
});

/** SignHashEndpointClient.kt, SignHashResponseTO.Success. */
export const SignHashResponse = z.object({ signatures: z.array(z.string()) });

/** CredentialsInfoRequestTO as CredentialsInfoRequest's defaults make it (chain, certInfo, authInfo). */
export const credentialsInfoRequest = (credentialID: string) => ({
  credentialID,
  certificates: 'chain',
  certInfo: true,
  authInfo: true,
  lang: null,
  clientData: null,
});

/** CredentialsListRequestTO with credentialInfo (certificates lower-cased, defaults sent). */
export const credentialsListRequest = () => ({
  credentialInfo: true,
  certificates: 'chain',
  certInfo: true,
  authInfo: true,
  onlyValid: false,
  lang: null,
  clientData: null,
});

/**
 * internal/AuthorizationDetailsOps.kt, toNimbusAuthDetail: the credential authorization's details (no
 * numSignatures; `label` put even when null).
 */
export const authorizationDetails = (
  credentialID: string,
  hashes: readonly string[],
  hashAlgorithmOID: string,
) => [
  {
    type: 'credential',
    credentialID,
    documentDigests: hashes.map((hash) => ({ hash, label: null })),
    hashAlgorithmOID,
  },
];

/** SignHashRequestTO (operationMode's default sent). */
export const signHashRequest = (
  credentialID: string,
  hashes: readonly string[],
  hashAlgorithmOID: string,
  signAlgo: string,
) => ({ credentialID, hashes, hashAlgorithmOID, signAlgo, operationMode: 'S' });
