/** Shared set-up for the CA integration tests: real SoftHSM, real DynamoDB Local tables. */
import { execFileSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Hsm, PrivateKeyRef } from '@pipeline/adapters/hsm';
import { AuditLog } from '@pipeline/audit';
import { AuditRepository } from '../../adapters/dynamodb/src/audit-repository';
import {
  CertificateRepository,
  LoggedCertificateRepository,
} from '../../adapters/dynamodb/src/certificate-repository';
import { defaultSignatureAlgorithm, type KeyType } from '@pipeline/core/shared';
import {
  signMessageHash,
  type AssertionBinding,
  type SignMessage,
  type SignerIdentity,
} from '@pipeline/core/identity';
import type { IssueCertificateInput } from '@pipeline/core/pki';
import { buildCsr } from '@pipeline/der';
import { directAssertion } from '../../../scripts/local/idp/direct-assertions';

/**
 * The CA's stores as the CA function wires them: the certificates table, and each certificate committed
 * with its `certificate.issued` entry in an audit log of the test's own table.
 */
export function caStores(
  doc: DynamoDBDocumentClient,
  tables: { readonly certificates: string; readonly audit: string },
): { certificates: CertificateRepository; logged: LoggedCertificateRepository } {
  const certificates = new CertificateRepository(doc, { tableName: tables.certificates });
  const audit = new AuditLog(new AuditRepository(doc, { tableName: tables.audit }), { chains: 1 });
  return { certificates, logged: new LoggedCertificateRepository(certificates, audit) };
}

export const IDENTITY: SignerIdentity = {
  commonName: 'Åsa Öberg-Nilsson',
  givenName: 'Åsa',
  surname: 'Öberg-Nilsson',
  serialNumber: '197001011234',
  country: 'SE',
};

/**
 * What the signer sends the CA for a fresh request (minus the CSR): a request id, the binding it will
 * sign, and an ID token of the direct identity provider for `signer` bound to it. `claims` change the
 * token's claims (undefined removes one); `binding` changes what the signer claims it will sign after the
 * token was made (a tampered request).
 */
export function evidenceFor(
  options: {
    readonly keyType?: KeyType;
    readonly signer?: SignerIdentity;
    readonly claims?: Record<string, unknown>;
    readonly binding?: Partial<AssertionBinding>;
    /** The request has this sign message (the token then carries an approval of it). */
    readonly signMessage?: SignMessage;
    /** The request has a sign message with this hash, the message itself does not come with it. */
    readonly signMessageHash?: string;
    /** Changes to the approval's claims. */
    readonly approval?: Record<string, unknown>;
  } = {},
): Omit<IssueCertificateInput, 'csrDer'> & { readonly requestId: string } {
  const keyType = options.keyType ?? 'EC-P256';
  const hash =
    options.signMessage === undefined ? options.signMessageHash : signMessageHash(options.signMessage);
  const request = {
    id: randomUUID(),
    digest: createHash('sha256').update(randomUUID()).digest('base64'),
    digestAlgorithm: 'SHA-256' as const,
    keyType,
    signatureAlgorithm: defaultSignatureAlgorithm(keyType),
    format: 'raw' as const,
    signer: options.signer ?? IDENTITY,
    ...(hash === undefined ? {} : { signMessageHash: hash }),
  };
  const binding: AssertionBinding = {
    requestId: request.id,
    digestAlgorithm: request.digestAlgorithm,
    digest: request.digest,
    keyType,
    signatureAlgorithm: request.signatureAlgorithm,
    format: 'raw',
    ...(hash === undefined ? {} : { signMessageHash: hash }),
  };
  return {
    requestId: request.id,
    assertion: directAssertion(request, options.claims, options.approval),
    binding: { ...binding, ...options.binding },
    ...(options.signMessage === undefined ? {} : { signMessage: options.signMessage }),
  };
}

/** A one-time key in the HSM (session object) and a CSR it signed. */
export async function keyAndCsr(
  hsm: Hsm,
  keyType: KeyType,
  keys: PrivateKeyRef[],
  subject: SignerIdentity = IDENTITY,
): Promise<{ csrDer: Buffer; spki: Buffer; key: PrivateKeyRef }> {
  const pair = await hsm.generateKeyPair(keyType, { extractable: false });
  keys.push(pair.privateKey);
  const csrDer = await buildCsr({
    subject,
    keyType,
    publicKeySpki: pair.publicKeySpki,
    sign: (d, o) => hsm.signDigest(pair.privateKey, d, o),
  });
  return { csrDer, spki: pair.publicKeySpki, key: pair.privateKey };
}

/** Runs openssl with the given files in a temporary directory; returns stdout. */
export function openssl(args: string[], files: Record<string, string | Buffer>): string {
  const dir = mkdtempSync(join(tmpdir(), 'ca-test-'));
  try {
    for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
    return execFileSync('openssl', args, { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
