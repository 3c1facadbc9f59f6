import { createHash, timingSafeEqual } from 'node:crypto';
import {
  assertionNonce,
  credentialDigest,
  isManifestBinding,
  manifestHash,
  type AssertionBinding,
  type CredentialBinding,
  type ManifestDocument,
  type SigningBinding,
} from '../identity/binding';
import {
  composeSignMessage,
  signMessageHash,
  validateSignMessage,
  type SignMessage,
} from '../identity/sign-message';
import type { AdesProfile, SignatureLevel } from '../shared/formats';
import { documentNameProblem } from '../signing/documents';
import { CscError } from './errors';
import {
  createdCredentialId,
  credentialById,
  DEFAULT_CREDENTIAL_ID,
  digestAlgorithmOf,
  digestOf,
  HASH_ALGORITHM_OIDS,
  MAX_SIGNATURES_PER_AUTHORIZATION,
} from './credentials';

/** A registered CSC client (an OAuth 2.0 confidential client): CSC_CLIENTS. */
export interface CscClient {
  readonly clientId: string;
  /** Shown to the citizen in the sign message. */
  readonly name: string;
  /** SHA-256 (hex) of the client secret: the secret itself is never stored by the service. */
  readonly secretHash: string;
  /** Exact redirect URIs. */
  readonly redirectUris: readonly string[];
}

export type CscScope = 'service' | 'credential';

/** A CSC signing method (docs/csc.md, "The format named at authorization or at signDoc"). */
export type CscMethod = 'signHash' | 'signDoc';

/** CSC `signature_format` (C: CAdES, P: PAdES) and the profile of the service's CMS it binds. */
export const SIGNATURE_FORMAT_PROFILES: Readonly<Record<string, AdesProfile>> = {
  C: 'CAdES-B-B',
  P: 'PAdES-B-B',
};
/**
 * CSC `conformance_level` and the pipeline's level (B-LTA: the service's B-LT, the client adds the rest).
 * The specification spells them `Ades-B-B`...; `AdES-B-B`... is taken as the same level.
 */
export const CONFORMANCE_LEVELS: Readonly<Record<string, SignatureLevel>> = {
  'Ades-B-B': 'B-B',
  'Ades-B-T': 'B-T',
  'Ades-B-LT': 'B-LT',
  'Ades-B-LTA': 'B-LTA',
};

/** The specification's spelling of a conformance level (`AdES-` read as `Ades-`), or undefined. */
export function conformanceLevelOf(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const name = value.replace(/^AdES-/, 'Ades-');
  return Object.hasOwn(CONFORMANCE_LEVELS, name) ? name : undefined;
}

/** signDoc: the CMS each digest gets, fixed at authorization. */
export interface CscDocumentSigning {
  /** CSC signature_format: `C` or `P`. */
  readonly signatureFormat: string;
  /** CSC conformance_level as the specification spells it: `Ades-B-B`, `-B-T`, `-B-LT` or `-B-LTA`. */
  readonly conformanceLevel: string;
  readonly profile: AdesProfile;
  readonly level: SignatureLevel;
}

/**
 * What a credential authorization authorizes, fixed when the client asks for it (oauth2/authorize) and
 * bound by the citizen's login: the sign request the pipeline will run. With signature_format and
 * conformance_level given, it binds `cms` with that profile, for signDoc only; with the hashes alone, the
 * login approves them in any format (`formatOpen`): signHash signs them `raw`, signDoc in the format and
 * level its body names (docs/csc.md, "The format named at authorization or at signDoc"). One hash: the single-document binding (v2); several:
 * the manifest of the documents (v3), each hash a document named by its label.
 */
export interface CscSigning {
  readonly credentialID: string;
  /** The methods it may be used at (once): signDoc alone when the format is bound. */
  readonly methods: readonly CscMethod[];
  /** The pipeline's sign request: its id is chosen at authorization, so that the nonce can bind it. */
  readonly binding: SigningBinding;
  /** The client's message, as the API receives it (for several documents the API composes the list). */
  readonly signMessage: SignMessage;
  /** How many signatures (hashes) it authorizes: CSC numSignatures. */
  readonly numSignatures: number;
  /** The format bound at authorization (signDoc only). */
  readonly document?: CscDocumentSigning;
}

/** The hashes a signing authorizes, in order (standard base64). */
export function authorizedDigests(signing: CscSigning): string[] {
  const { binding } = signing;
  return isManifestBinding(binding) ? binding.documents.map((d) => d.digest) : [binding.digest];
}

/**
 * What the identity provider shows and the citizen approves: the signRequest's `tbs_data` (the digest, or
 * the manifestHash for several) and the sign message (for several, with the list of the documents).
 */
export function approvalRequestOf(signing: CscSigning): { tbsData: string; signMessage: SignMessage } {
  const { binding } = signing;
  if (!isManifestBinding(binding)) return { tbsData: binding.digest, signMessage: signing.signMessage };
  return {
    tbsData: manifestHash(binding.documents, binding.formatOpen),
    signMessage: composeSignMessage(signing.signMessage, binding.documents),
  };
}

/**
 * What a service authorization's login also approves: a one-time credential of a type, created for the
 * citizen (a pool key certified for them and kept wrapped) that a later credential authorization of the
 * same client signs with once (docs/csc.md, "Certificate before hash").
 */
export interface CscCredentialCreation {
  /** The created credential's id: `<type>.<request id>`. */
  readonly credentialID: string;
  readonly binding: CredentialBinding;
  readonly signMessage: SignMessage;
}

/** What the provider shows for a credential's creation: its credentialDigest and the message. */
export function creationApprovalOf(creation: CscCredentialCreation): {
  tbsData: string;
  signMessage: SignMessage;
} {
  return { tbsData: credentialDigest(creation.binding), signMessage: creation.signMessage };
}

/** An authorization request as the service accepted it. */
export interface CscAuthorizationRequest {
  readonly clientId: string;
  readonly redirectUri: string;
  /** Whether the request named it (then oauth2/token requires it, RFC 6749 4.1.3). */
  readonly redirectUriSent: boolean;
  readonly state?: string;
  readonly codeChallenge: string;
  readonly scope: CscScope;
  readonly signing?: CscSigning;
  /** A service authorization: the one-time credential its login creates. */
  readonly creation?: CscCredentialCreation;
}

const str = (params: Readonly<Record<string, unknown>>, name: string): string | undefined => {
  const value = params[name];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || value.length > 4096) {
    throw new CscError('invalid_request', `Invalid parameter ${name}`);
  }
  return value;
};

/**
 * The longest `state` kept for the client (RFC 6749 leaves it to the server): an opaque value against
 * CSRF, and what an unauthenticated caller could otherwise make every flow item carry.
 */
export const MAX_STATE_LENGTH = 512;

/**
 * The client and its redirect URI, checked before anything else: an authorization request that fails
 * here is answered to the user agent, never redirected (RFC 6749 4.1.2.1).
 */
export function authorizingClient(
  params: Readonly<Record<string, unknown>>,
  clients: readonly CscClient[],
): { client: CscClient; redirectUri: string } {
  const clientId = str(params, 'client_id');
  const client = clients.find((c) => c.clientId === clientId);
  if (!client) throw new CscError('invalid_client', 'unknown client_id');
  const redirectUri =
    str(params, 'redirect_uri') ?? (client.redirectUris.length === 1 ? client.redirectUris[0] : undefined);
  if (redirectUri === undefined || !client.redirectUris.includes(redirectUri)) {
    throw new CscError('invalid_request', 'redirect_uri is not registered for this client');
  }
  return { client, redirectUri };
}

/**
 * The authorization request's parameters the service reads (CSC v2 8.3.2, RFC 7636, RFC 9396): a pushed
 * request keeps only these; others are ignored (RFC 9126 2.1 leaves unknown ones to the server).
 */
export const AUTHORIZATION_PARAMETERS: ReadonlySet<string> = new Set([
  'response_type',
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'code_challenge',
  'code_challenge_method',
  'authorization_details',
  'credentialID',
  'signatureQualifier',
  'numSignatures',
  'hashes',
  'hashAlgorithmOID',
  'description',
  'signature_format',
  'conformance_level',
]);

/**
 * What a flow keeps of an accepted authorization request: the parameters the service reads
 * (AUTHORIZATION_PARAMETERS), non-empty strings only, as the client sent them.
 */
export function flowParams(params: Readonly<Record<string, unknown>>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of AUTHORIZATION_PARAMETERS) {
    const value = params[name];
    if (typeof value === 'string' && value !== '') kept[name] = value;
  }
  return kept;
}

/**
 * The authorization request of a flow at the callback: its parameters checked again against the
 * registered clients (client, redirect URI) and parsed as oauth2/authorize parsed them, with the sign
 * request id chosen then.
 */
export function requestOfFlow(
  flow: { readonly params: Readonly<Record<string, string>>; readonly requestId: string },
  clients: readonly CscClient[],
): CscAuthorizationRequest {
  const { client, redirectUri } = authorizingClient(flow.params, clients);
  return parseAuthorizationRequest(flow.params, client, redirectUri, () => flow.requestId);
}

/**
 * The registered client a grant or an outcome read from the table names: a sign request is submitted or
 * read only as `csc:<clientId>` of a registered client (a name written into the table is refused).
 */
export function registeredClient(clientId: unknown, clients: readonly CscClient[]): CscClient {
  const client = clients.find((c) => c.clientId === clientId);
  if (!client) throw new CscError('invalid_token', 'the access token is not of a registered client');
  return client;
}

/**
 * The flow's client and redirect URI, checked again against the registration when the provider calls
 * back: the browser is sent with a code only to a URI registered for that client.
 */
export function registeredRedirect(
  clientId: string,
  redirectUri: string,
  clients: readonly CscClient[],
): void {
  const client = clients.find((c) => c.clientId === clientId);
  if (!client?.redirectUris.includes(redirectUri)) {
    throw new CscError('invalid_request', 'redirect_uri is not registered for this client');
  }
}

/**
 * Parses oauth2/authorize (CSC v2 8.3.2) after the client: response_type `code`, PKCE with S256 only,
 * scope `service` or `credential` (or `authorization_details` of type `credential`). A credential
 * authorization names its credential (credentialID, or signatureQualifier for the default one), the
 * hashes (base64url, comma-separated; or documentDigests) with their hashAlgorithmOID, and numSignatures
 * equal to their count. `newRequestId` gives the pipeline's sign request id.
 */
type Params = Readonly<Record<string, unknown>>;
type DigestAlgorithm = ReturnType<typeof digestAlgorithmOf>;

/** PKCE is required, S256 only: the code challenge. */
function codeChallengeOf(params: Params): string {
  const codeChallenge = str(params, 'code_challenge');
  if (codeChallenge === undefined || !/^[A-Za-z0-9_-]{43}$/.test(codeChallenge)) {
    throw new CscError('invalid_request', 'code_challenge is required (PKCE, S256)');
  }
  if (str(params, 'code_challenge_method') !== 'S256') {
    throw new CscError('invalid_request', 'code_challenge_method must be S256');
  }
  return codeChallenge;
}

/** The credential named, or the default one when only a signatureQualifier is given. */
function credentialIdOf(params: Params, details: Details | undefined): string {
  const credentialID =
    (details?.credentialID as string | undefined) ??
    str(params, 'credentialID') ??
    (details?.signatureQualifier !== undefined || str(params, 'signatureQualifier') !== undefined
      ? DEFAULT_CREDENTIAL_ID
      : undefined);
  if (credentialID === undefined) {
    throw new CscError('invalid_request', 'credentialID or signatureQualifier is required');
  }
  return credentialID;
}

/** The hashes to sign (documentDigests or hashes) and numSignatures, which must count them, within multisign. */
function hashEntries(
  params: Params,
  details: Details | undefined,
): { entries: { hash: unknown; label?: string }[]; numSignatures: number } {
  const entries: { hash: unknown; label?: string }[] = details
    ? documentDigests(details.documentDigests)
    : (str(params, 'hashes') ?? '').split(',').flatMap((h) => (h === '' ? [] : [{ hash: h }]));
  if (entries.length === 0) throw new CscError('invalid_request', 'hashes (or documentDigests) are required');
  const numSignatures = countOf(
    details?.numSignatures ?? str(params, 'numSignatures'),
    details ? entries.length : undefined,
  );
  if (numSignatures !== entries.length) {
    throw new CscError('invalid_request', 'numSignatures does not match the number of hashes');
  }
  if (numSignatures > MAX_SIGNATURES_PER_AUTHORIZATION) {
    throw new CscError(
      'invalid_request',
      `numSignatures exceeds the credential's multisign (${MAX_SIGNATURES_PER_AUTHORIZATION})`,
    );
  }
  return { entries, numSignatures };
}

/**
 * numSignatures: a JSON integer, or a query parameter of decimal digits ("1e0", "1.0", " 1" are refused);
 * absent from authorization_details, the count of its documentDigests.
 */
function countOf(value: unknown, implied: number | undefined): number {
  const count =
    value === undefined
      ? implied
      : typeof value === 'number'
        ? value
        : typeof value === 'string' && /^[1-9][0-9]{0,3}$/.test(value)
          ? Number(value)
          : undefined;
  if (count === undefined || !Number.isSafeInteger(count) || count < 1) {
    throw new CscError('invalid_request', 'Invalid parameter numSignatures: a positive integer');
  }
  return count;
}

/**
 * What the ID token's nonce binds: one digest (an assertion binding) for one signature, the manifest of
 * the documents with the composed sign message for several.
 */
function requestBinding(
  requestId: string,
  credential: ReturnType<typeof credentialById>,
  digestAlgorithm: DigestAlgorithm,
  documents: ManifestDocument[],
  document: CscDocumentSigning | undefined,
  signMessage: SignMessage,
): SigningBinding {
  const { keyType, signatureAlgorithm } = credential;
  // One unlabelled hash: the single-document binding; a labelled one keeps its label as a manifest of one.
  if (documents.length === 1 && documents[0].name === undefined) {
    const { format } = documents[0];
    // CSC hashes are the API's formats; a sign task is the DSS-Ext door's alone.
    if (format === 'dss-task') throw new CscError('invalid_request', 'Invalid parameter: format');
    const single: AssertionBinding = {
      requestId,
      digestAlgorithm,
      digest: documents[0].digest,
      keyType,
      signatureAlgorithm,
      format,
      ...(document ? { profile: document.profile } : { formatOpen: true }),
      signMessageHash: signMessageHash(signMessage),
    };
    return single;
  }
  let composed: SignMessage;
  try {
    composed = composeSignMessage(signMessage, documents);
  } catch {
    throw new CscError('invalid_request', 'the sign message with the list of the documents is too long');
  }
  return {
    requestId,
    keyType,
    signatureAlgorithm,
    documents,
    signMessageHash: signMessageHash(composed),
    ...(document ? {} : { formatOpen: true }),
  };
}

export function parseAuthorizationRequest(
  params: Params,
  client: CscClient,
  redirectUri: string,
  newRequestId: () => string,
): CscAuthorizationRequest {
  if (str(params, 'response_type') !== 'code') {
    throw new CscError('unsupported_response_type', 'response_type must be code');
  }
  const codeChallenge = codeChallengeOf(params);
  const state = str(params, 'state');
  if (state !== undefined && state.length > MAX_STATE_LENGTH) {
    throw new CscError('invalid_request', `Invalid parameter state: at most ${MAX_STATE_LENGTH} characters`);
  }
  const details = authorizationDetails(str(params, 'authorization_details'));
  const scope = str(params, 'scope') ?? (details ? 'credential' : undefined);
  const base = {
    clientId: client.clientId,
    redirectUri,
    redirectUriSent: str(params, 'redirect_uri') !== undefined,
    codeChallenge,
    ...(state === undefined ? {} : { state }),
  };
  if (scope === 'service') {
    if (details) throw new CscError('invalid_request', 'authorization_details is for scope credential');
    return { ...base, scope: 'service', creation: creationOf(params, client, newRequestId) };
  }
  if (scope !== 'credential') throw new CscError('invalid_scope', 'scope must be service or credential');

  const credentialID = credentialIdOf(params, details);
  const credential = credentialById(credentialID);
  const digestAlgorithm = digestAlgorithmOf(details?.hashAlgorithmOID ?? str(params, 'hashAlgorithmOID'));
  const { entries, numSignatures } = hashEntries(params, details);
  const document = documentSigning(
    (details?.signature_format as unknown) ?? str(params, 'signature_format'),
    (details?.conformance_level as unknown) ?? str(params, 'conformance_level'),
  );
  const format = document ? 'cms' : 'raw';
  const documents: ManifestDocument[] = entries.map((e) => ({
    digestAlgorithm,
    digest: digestOf(e.hash, digestAlgorithm, details ? 'documentDigests' : 'hashes'),
    format,
    ...(document ? { profile: document.profile } : {}),
    ...(e.label === undefined ? {} : { name: e.label }),
  }));
  const signMessage = signMessageFor(client, str(params, 'description') ?? detailsLabel(details));
  const requestId = newRequestId();
  const bound = requestBinding(requestId, credential, digestAlgorithm, documents, document, signMessage);
  // A login's own credential: the request signs with its key (the binding's last line names it).
  const binding = credential.credentialRequestId
    ? { ...bound, credentialId: credential.credentialRequestId }
    : bound;
  return {
    ...base,
    scope: 'credential',
    signing: {
      credentialID,
      methods: document ? ['signDoc'] : ['signHash', 'signDoc'],
      binding,
      signMessage,
      numSignatures,
      ...(document ? { document } : {}),
    },
  };
}

/**
 * The credential a service login creates: of the type `credentialID` (or `signatureQualifier`) names, by
 * default DEFAULT_CREDENTIAL_ID; its request id chosen now so that the login's nonce binds it.
 */
function creationOf(params: Params, client: CscClient, newRequestId: () => string): CscCredentialCreation {
  const type = credentialById(str(params, 'credentialID') ?? DEFAULT_CREDENTIAL_ID);
  if (type.credentialRequestId !== undefined) {
    throw new CscError(
      'invalid_request',
      'Invalid parameter credentialID: a credential type at scope service',
    );
  }
  const description = str(params, 'description');
  const text = `${client.name} asks to create a one-time signing certificate in your name, for signatures you approve separately.${
    description === undefined ? '' : `\n\n${description}`
  }`;
  let signMessage: SignMessage;
  try {
    signMessage = validateSignMessage({ text, mimeType: 'text/plain' });
  } catch {
    throw new CscError('invalid_request', 'Invalid parameter description: outside the sign message rules');
  }
  const requestId = newRequestId();
  return {
    credentialID: createdCredentialId(type, requestId),
    signMessage,
    binding: {
      requestId,
      keyType: type.keyType,
      signatureAlgorithm: type.signatureAlgorithm,
      credential: 'create',
      signMessageHash: signMessageHash(signMessage),
    },
  };
}

/** signature_format and conformance_level as the service signs them; undefined when both are absent. */
export function documentSigning(
  signatureFormat: unknown,
  conformanceLevel: unknown,
): CscDocumentSigning | undefined {
  if (signatureFormat === undefined && conformanceLevel === undefined) return undefined;
  const profile =
    typeof signatureFormat === 'string' && Object.hasOwn(SIGNATURE_FORMAT_PROFILES, signatureFormat)
      ? SIGNATURE_FORMAT_PROFILES[signatureFormat]
      : undefined;
  if (!profile) throw new CscError('invalid_request', 'Invalid parameter signature_format: C or P');
  const name = conformanceLevelOf(conformanceLevel);
  const level = name === undefined ? undefined : CONFORMANCE_LEVELS[name];
  if (!level) {
    throw new CscError(
      'invalid_request',
      'Invalid parameter conformance_level: AdES-B-B, AdES-B-T, AdES-B-LT or AdES-B-LTA',
    );
  }
  return {
    signatureFormat: signatureFormat as string,
    conformanceLevel: name as string,
    profile,
    level,
  };
}

type Details = Record<string, unknown> & { documentDigests?: unknown };

/** The first `authorization_details` entry of type `credential` (RFC 9396, CSC v2 8.3.2). */
function authorizationDetails(raw: string | undefined): Details | undefined {
  if (raw === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new CscError('invalid_request', 'authorization_details is not JSON');
  }
  const list = Array.isArray(parsed) ? parsed : [parsed];
  const entry = list.find((d) => (d as { type?: unknown } | null)?.type === 'credential') as
    Details | undefined;
  if (!entry || list.length !== 1) {
    throw new CscError('invalid_request', 'authorization_details must be one entry of type credential');
  }
  return entry;
}

/** The entry's own `label` (the description shown to the citizen): a string when given. */
function detailsLabel(details: Details | undefined): string | undefined {
  const label = details?.label;
  if (label === undefined) return undefined;
  if (typeof label !== 'string') throw new CscError('invalid_request', 'Invalid parameter label: a string');
  return label;
}

/** The entry's documentDigests: each a hash and, optionally, its label (the document's name). */
function documentDigests(value: unknown): { hash: unknown; label?: string }[] {
  if (!Array.isArray(value)) throw new CscError('invalid_request', 'documentDigests is required');
  return value.map((d) => {
    const { hash, label } = (d ?? {}) as { hash?: unknown; label?: unknown };
    // A null label is none (eudi-lib-jvm-rqes-csc-kt sends one for an unlabelled hash).
    if (label === undefined || label === null) return { hash };
    if (typeof label !== 'string' || documentNameProblem(label) !== undefined) {
      throw new CscError(
        'invalid_request',
        'Invalid parameter documentDigests: a label outside the name rules',
      );
    }
    return { hash, label };
  });
}

/**
 * What the identity provider shows the citizen: who asks (the registered client's name) and, when the
 * client described it, what (CSC `description`), with the document's fingerprint the provider adds from
 * `tbs_data`. Validated by the sign message rule the API applies (`SIGN_MESSAGE_INVALID`).
 */
function signMessageFor(client: CscClient, description: string | undefined): SignMessage {
  const text = `${client.name} asks you to sign a document with a one-time certificate.${
    description === undefined ? '' : `\n\n${description}`
  }`;
  try {
    return validateSignMessage({ text, mimeType: 'text/plain' });
  } catch {
    throw new CscError('invalid_request', 'Invalid parameter description: outside the sign message rules');
  }
}

/**
 * The `authorization_details` the token response grants (RFC 9396 7): one entry of type `credential`
 * with what the citizen's login binds: the credential, the hashes in order (base64) with their labels,
 * their count and algorithm, and for signDoc the format and level.
 */
export function grantedAuthorizationDetails(signing: CscSigning): Record<string, unknown>[] {
  const { binding } = signing;
  const documents = isManifestBinding(binding)
    ? binding.documents
    : [{ digest: binding.digest, digestAlgorithm: binding.digestAlgorithm, name: undefined }];
  return [
    {
      type: 'credential',
      credentialID: signing.credentialID,
      hashAlgorithmOID: HASH_ALGORITHM_OIDS[documents[0].digestAlgorithm],
      numSignatures: signing.numSignatures,
      documentDigests: documents.map((d) => ({
        hash: d.digest,
        ...(d.name === undefined ? {} : { label: d.name }),
      })),
      ...(signing.document
        ? {
            signature_format: signing.document.signatureFormat,
            conformance_level: signing.document.conformanceLevel,
          }
        : {}),
    },
  ];
}

/** The nonce the citizen's login must carry (the API's nonce of the bound sign request or creation). */
export function nonceOf(signing: CscSigning | CscCredentialCreation): string {
  return assertionNonce(signing.binding);
}

/** PKCE S256 (RFC 7636 4.6): BASE64URL(SHA-256(verifier)) equals the challenge. */
export function pkceMatches(verifier: unknown, challenge: string): boolean {
  if (typeof verifier !== 'string' || !/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return false;
  const computed = Buffer.from(createHash('sha256').update(verifier).digest('base64url'));
  const expected = Buffer.from(challenge);
  return computed.length === expected.length && timingSafeEqual(computed, expected);
}

/** SHA-256 (hex) of a secret or a token: how the service stores and looks them up. */
export function secretHash(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** Whether `secret` is the client's (compared as hashes, in constant time). */
export function clientSecretMatches(client: CscClient, secret: unknown): boolean {
  if (typeof secret !== 'string' || secret.length === 0 || secret.length > 512) return false;
  const a = Buffer.from(secretHash(secret), 'hex');
  const b = Buffer.from(client.secretHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}
