/**
 * A sign task of the Swedish eID framework's DSS extension (ELN-0609 §4.1): the e-service sends the octets
 * it wants signed, which it built itself (an XML SignedInfo, or a CMS SignedAttributes SET for a PDF or CMS
 * signature), and for AdES BES/EPES the service updates them once the certificate exists (the signing
 * certificate reference, the signing time) before the one-time key signs. Only the DSS-Ext door makes
 * such documents; the API's formats stay raw and cms.
 */
import { createHash } from 'node:crypto';
import { nodeHashName, type DigestAlgorithm, type SignatureAlgorithm } from '../shared/algorithms';

export type TaskSigType = 'XML' | 'PDF' | 'CMS';
export type TaskAdesType = 'None' | 'BES' | 'EPES';

/** One task as the door passed it on: binary fields in standard base64. */
export interface SignTaskData {
  readonly sigType: TaskSigType;
  readonly adesType: TaskAdesType;
  /** ToBeSignedBytes as sent. */
  readonly toBeSigned: string;
  /** XAdES: the signature's Id and the ds:Object holding the qualifying properties (may be absent). */
  readonly signatureId?: string;
  readonly adesObject?: string;
}

/** Versioned so the task's digest can change without an old one matching a new task. */
export const SIGN_TASK_CONTEXT = 'hsm-signing-pipeline/sign-task/v1';

/**
 * The task's `digest` as a document of the request (what the login's manifest binds): the digest of its
 * lines (context, sigType, adesType, toBeSigned, signatureId, adesObject), so a task changed after the login
 * no longer matches the assertion.
 */
export function signTaskDigest(task: SignTaskData, algorithm: DigestAlgorithm): string {
  const lines = [
    SIGN_TASK_CONTEXT,
    task.sigType,
    task.adesType,
    task.toBeSigned,
    task.signatureId ?? '',
    task.adesObject ?? '',
  ];
  return createHash(nodeHashName(algorithm)).update(lines.join('\n')).digest('base64');
}

/** What the task becomes once the certificate exists. */
export interface PreparedTask {
  /** The digest the one-time key signs: of `toBeSigned` below. */
  readonly toBeSigned: Buffer;
  /** The updated ToBeSignedBytes (the input when nothing changed) and XAdES object. */
  readonly toBeSignedBytes: Buffer;
  readonly adesObject?: Buffer;
  /** The signature value as the task's format writes it (XML ECDSA: r‖s instead of DER). */
  encodeSignature(signature: Buffer): Buffer;
}

/** Updates a task for the certificate (implemented with lambdas/der and lambdas/xml). */
export type TaskPreparer = (input: {
  readonly task: SignTaskData;
  readonly digestAlgorithm: DigestAlgorithm;
  readonly signatureAlgorithm: SignatureAlgorithm;
  readonly certificatePem: string;
  readonly signingTime: Date;
}) => PreparedTask;
