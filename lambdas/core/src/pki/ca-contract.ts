/**
 * The CA functions' invocation contract, in one place for both ends: the signer's issuer adapter and the
 * API's revoker build these payloads, the CA handlers parse them. Every payload is parsed at runtime
 * (zod): an invocation is input from another process, and a malformed one gets a named refusal.
 */
import { z } from 'zod';
import { DIGEST_ALGORITHMS, KEY_TYPES, SIGNATURE_ALGORITHMS } from '../shared/algorithms';
import type { IssueCertificateInput, IssuedCertificate } from './certificate-issuer';
import { REVOCATION_REASONS } from './revocation';
import { ADES_PROFILES, DOCUMENT_FORMATS, SIGNATURE_FORMATS } from '../shared/formats';
import { MAX_SIGN_MESSAGE_LENGTH, type SignMessage } from '../identity/sign-message';
import { MAX_DOCUMENT_NAME_LENGTH, MAX_DOCUMENTS } from '../identity/binding';
import { isDssEvidence, MAX_DSS_EVIDENCE_LENGTH } from '../identity/dss-evidence';

/** Items per batch invocation: a batch of CSRs, assertions and certificates stays far below 6 MB. */
export const MAX_ISSUE_BATCH_ITEMS = 100;
/** An RSA-4096 CSR is about 1.2 kB; base64 of 8 kB is plenty. */
const MAX_CSR_BASE64 = 11_000;
/** As the API's identityAssertion. */
const MAX_ASSERTION_LENGTH = 8192;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

const singleBinding = z.strictObject({
  requestId: z.string().min(1).max(256),
  digestAlgorithm: z.enum(DIGEST_ALGORITHMS),
  digest: z.string().min(1).max(128).regex(BASE64),
  keyType: z.enum(KEY_TYPES),
  signatureAlgorithm: z.enum(SIGNATURE_ALGORITHMS),
  format: z.enum(SIGNATURE_FORMATS),
  profile: z.enum(ADES_PROFILES).optional(),
  signMessageHash: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
  formatOpen: z.literal(true).optional(),
  credentialId: z.string().min(1).max(256).optional(),
});

/**
 * A request with `documents`: the documents themselves (the CA recomputes their manifest and the v3
 * nonce, and composes the sign message with their names). Names: shape and size only here (a UTF-16
 * unit is at most one character); the nonce decides.
 */
const manifestBinding = z.strictObject({
  requestId: z.string().min(1).max(256),
  keyType: z.enum(KEY_TYPES),
  signatureAlgorithm: z.enum(SIGNATURE_ALGORITHMS),
  documents: z
    .array(
      z.strictObject({
        digestAlgorithm: z.enum(DIGEST_ALGORITHMS),
        digest: z.string().min(1).max(128).regex(BASE64),
        format: z.enum(DOCUMENT_FORMATS),
        profile: z.enum(ADES_PROFILES).optional(),
        name: z
          .string()
          .min(1)
          .max(2 * MAX_DOCUMENT_NAME_LENGTH)
          .optional(),
      }),
    )
    .min(1)
    .max(MAX_DOCUMENTS),
  signMessageHash: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
  formatOpen: z.literal(true).optional(),
  credentialId: z.string().min(1).max(256).optional(),
});

/** A one-time credential's creation (CredentialBinding). */
const credentialBinding = z.strictObject({
  requestId: z.string().min(1).max(256),
  keyType: z.enum(KEY_TYPES),
  signatureAlgorithm: z.enum(SIGNATURE_ALGORITHMS),
  credential: z.literal('create'),
  signMessageHash: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
});

const binding = z.union([singleBinding, manifestBinding, credentialBinding]);

/**
 * The sign message as the record holds it: only its shape and size here (a UTF-16 unit is at most one
 * character), so that the CA's own check of it (validateSignMessage) names the refusal,
 * SIGN_MESSAGE_INVALID.
 */
const signMessage = z.strictObject({
  text: z.string().max(2 * MAX_SIGN_MESSAGE_LENGTH),
  mimeType: z.string().max(64),
});

/** One certificate request: the CSR (base64 DER), the evidence and what it must bind. */
export const IssueItemSchema = z.strictObject({
  requestId: z.string().min(1).max(256),
  csrDer: z.string().min(1).max(MAX_CSR_BASE64).regex(BASE64),
  attemptId: z.string().min(1).max(64).optional(),
  assertion: z
    .string()
    .min(1)
    .max(MAX_DSS_EVIDENCE_LENGTH)
    .refine((a) => a.length <= MAX_ASSERTION_LENGTH || isDssEvidence(a), 'the assertion is too long'),
  binding,
  signMessage: signMessage.optional(),
  ocspResponse: z.literal(true).optional(),
});
export type IssueItem = z.infer<typeof IssueItemSchema>;

export const IssueBatchRequestSchema = z.strictObject({
  action: z.literal('issue-batch'),
  items: z.array(z.unknown()).min(1).max(MAX_ISSUE_BATCH_ITEMS),
});
export type IssueBatchRequest = { readonly action: 'issue-batch'; readonly items: readonly IssueItem[] };

/** The invocation for these certificate requests (the issuer adapter's side). */
export function issueBatchRequest(inputs: readonly IssueCertificateInput[]): IssueBatchRequest {
  return {
    action: 'issue-batch',
    items: inputs.map((input) => ({
      requestId: input.requestId,
      csrDer: input.csrDer.toString('base64'),
      ...(input.attemptId === undefined ? {} : { attemptId: input.attemptId }),
      assertion: input.assertion,
      binding:
        'documents' in input.binding
          ? { ...input.binding, documents: [...input.binding.documents] }
          : input.binding,
      ...(input.signMessage === undefined ? {} : { signMessage: input.signMessage }),
      ...(input.ocspResponse ? { ocspResponse: true as const } : {}),
    })),
  };
}

/** A checked item as the CA's input (the CA handler's side). */
export function issueInputOf(item: IssueItem): IssueCertificateInput {
  const { csrDer, signMessage: message, ...rest } = item;
  return {
    ...rest,
    csrDer: Buffer.from(csrDer, 'base64'),
    // As received: the CA checks it (an unknown MIME type is SIGN_MESSAGE_INVALID there, not here).
    ...(message === undefined ? {} : { signMessage: message as SignMessage }),
  };
}

const refusal = z.strictObject({
  ok: z.literal(false),
  error: z.strictObject({ code: z.string().max(64), message: z.string().max(1024) }),
});
export type CaRefusal = z.infer<typeof refusal>;

export const IssueItemResultSchema = z.union([
  z.strictObject({
    ok: z.literal(true),
    certificatePem: z.string(),
    chainPem: z.array(z.string()),
    serialHex: z.string().regex(/^[0-9a-f]{1,64}$/),
    ocspResponse: z.string().max(8192).optional(),
  }),
  refusal,
]);
export type IssueItemResult = z.infer<typeof IssueItemResultSchema>;

/** The answer for an issued certificate (the CA handler's side). */
export function issuedResult(certificate: IssuedCertificate): IssueItemResult {
  return {
    ok: true,
    certificatePem: certificate.certificatePem,
    chainPem: [...certificate.chainPem],
    serialHex: certificate.serialHex,
    ...(certificate.ocspResponse ? { ocspResponse: certificate.ocspResponse } : {}),
  };
}

/** The answer to a batch: one result per item, in order; or the whole batch refused. */
export const IssueBatchResponseSchema = z.union([
  z.strictObject({ results: z.array(IssueItemResultSchema) }),
  refusal,
]);
export type IssueBatchResponse = z.infer<typeof IssueBatchResponseSchema>;

/**
 * The revocation function's requests. `revoke`: a serial, by an operator (`requestedBy`). `revoke-request`:
 * the certificate the CA issued for a request id, by the API for the client that asks; refused unless the
 * CA recorded that request id as that client's (`register-request`, which the API sends before it stores a
 * request: the first client to register an id keeps it). A client never names a serial.
 */
const REQUEST_ID = z.string().min(1).max(256);
const CLIENT_ID = z.string().min(1).max(256);
export const RevokeRequestSchema = z.discriminatedUnion('action', [
  z.strictObject({
    action: z.literal('revoke'),
    serial: z.string().min(1).max(64),
    reason: z.enum(REVOCATION_REASONS),
    requestedBy: z.string().min(1).max(256),
  }),
  z.strictObject({
    action: z.literal('revoke-request'),
    requestId: REQUEST_ID,
    client: CLIENT_ID,
    reason: z.enum(REVOCATION_REASONS),
  }),
  z.strictObject({ action: z.literal('register-request'), requestId: REQUEST_ID, client: CLIENT_ID }),
  /** A one-time credential never used (by the reconciler): revoked unless the CA released it. */
  z.strictObject({
    action: z.literal('retire-credential'),
    requestId: REQUEST_ID,
    requestedBy: z.string().min(1).max(256),
  }),
]);
export type RevokeRequest = z.infer<typeof RevokeRequestSchema>;

/** The revocation function's refusals of a request's revocation or registration. */
export const REVOCATION_REFUSALS = {
  /** The CA issued no certificate for the request. */
  unknown: 'CERTIFICATE_UNKNOWN',
  /** The CA did not record the request id as the asking client's. */
  notOwned: 'REQUEST_NOT_OWNED',
  /** Another client registered the request id first. */
  taken: 'REQUEST_ID_TAKEN',
  /** A one-time credential's certificate released to a request: not retired. */
  used: 'CREDENTIAL_USED',
} as const;

export const RegisterResponseSchema = z.union([z.strictObject({ ok: z.literal(true) }), refusal]);
export type RegisterResponse = z.infer<typeof RegisterResponseSchema>;

const HASH_HEX = z.string().regex(/^[0-9a-f]{64}$/);

/** An audit receipt as the revocation function hands it on (see core's audit types). */
const AuditReceiptSchema = z.strictObject({
  chain: z.number().int().min(0),
  sequence: z.number().int().min(1),
  hash: HASH_HEX,
  leafIndex: z.number().int().min(0),
  treeSize: z.number().int().min(1),
  path: z.array(HASH_HEX).max(64),
  head: z
    .strictObject({
      keyLabel: z.string().min(1).max(128),
      algorithm: z.literal('ECDSA-P384-SHA384'),
      signature: z.string().regex(BASE64).max(256),
    })
    .optional(),
});

export const RevokeResponseSchema = z.union([
  z.strictObject({
    ok: z.literal(true),
    outcome: z.enum(['revoked', 'already-revoked']),
    serialHex: z.string(),
    reason: z.enum(REVOCATION_REASONS),
    /** Epoch ms. */
    revokedAt: z.number(),
    /** The revocation's audit receipt (a new revocation only), its head signed when the audit key was reachable. */
    receipt: AuditReceiptSchema.optional(),
  }),
  refusal,
]);
export type RevokeResponse = z.infer<typeof RevokeResponseSchema>;

export function caRefusal(code: string, message: string): CaRefusal {
  return { ok: false, error: { code, message } };
}
