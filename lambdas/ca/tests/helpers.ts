/** Shared set-up for the CA integration tests: real SoftHSM, real DynamoDB Local tables. */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Hsm, PrivateKeyRef } from '../../adapters/hsm/src';
import type { KeyType, SignerIdentity, StoredSignRequest } from '../../core/src';
import { buildCsr } from '../../pki/src';
import type { RequestLookup } from '../src';

export const IDENTITY: SignerIdentity = {
  commonName: 'Åsa Öberg-Nilsson',
  givenName: 'Åsa',
  surname: 'Öberg-Nilsson',
  serialNumber: '197001011234',
  country: 'SE',
};

/** Minimal lookup over the requests table: the same strongly consistent get the requests repository does. */
export function tableLookup(doc: DynamoDBDocumentClient, tableName: string): RequestLookup {
  return {
    async get(id) {
      const out = await doc.send(new GetCommand({ TableName: tableName, Key: { id }, ConsistentRead: true }));
      return out.Item as StoredSignRequest | undefined;
    },
  };
}

export async function putRequest(
  doc: DynamoDBDocumentClient,
  tableName: string,
  overrides: Partial<StoredSignRequest> = {},
): Promise<StoredSignRequest> {
  const now = Date.now();
  const record: StoredSignRequest = {
    id: randomUUID(),
    clientId: 'test-client',
    status: 'signing',
    digest: Buffer.alloc(32, 7).toString('base64'),
    digestAlgorithm: 'SHA-256',
    keyType: 'EC-P256',
    signatureAlgorithm: 'ECDSA',
    signer: IDENTITY,
    receivedAt: now,
    startedAt: now,
    expiresAt: Math.floor(now / 1000) + 3600,
    ...overrides,
  };
  await doc.send(new PutCommand({ TableName: tableName, Item: record }));
  return record;
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
