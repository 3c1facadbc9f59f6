/**
 * The used-assertions table against DynamoDB Local: the first use claims an assertion, a resend of the same
 * request by the same client is let through, anyone else is refused, and the item expires with it.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '@pipeline/adapters/aws';
import { loadAwsConfig } from '@pipeline/config';
import { createTestTables } from '../../../../scripts/local/resources';
import { AssertionReplayRepository } from '../src/assertion-replay-repository';

let doc: DynamoDBDocumentClient;
let table: string;
let repository: AssertionReplayRepository;

beforeAll(async () => {
  ({ assertions: table } = await createTestTables(['assertions']));
  doc = documentClient(loadAwsConfig(process.env));
  repository = new AssertionReplayRepository(doc, { tableName: table });
});

afterAll(() => doc?.destroy());

test('one request and client per assertion, until it expires', async () => {
  const key = randomBytes(32).toString('hex');
  const use = { requestId: randomUUID(), clientId: 'client-a', expiresAt: Date.now() + 360_500 };
  expect(await repository.claim(key, use)).toBe(true);
  expect(await repository.claim(key, use)).toBe(true);
  expect(await repository.claim(key, { ...use, clientId: 'client-b' })).toBe(false);
  expect(await repository.claim(key, { ...use, requestId: randomUUID() })).toBe(false);
  const item = (await doc.send(new GetCommand({ TableName: table, Key: { pk: key } }))).Item;
  expect(item).toEqual({ pk: key, ...use, expiresAt: Math.ceil(use.expiresAt / 1000) });
});

test('concurrent first uses by different clients: exactly one wins', async () => {
  const key = randomBytes(32).toString('hex');
  const requestId = randomUUID();
  const results = await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      repository.claim(key, { requestId, clientId: `client-${i}`, expiresAt: Date.now() + 60_000 }),
    ),
  );
  expect(results.filter(Boolean)).toHaveLength(1);
});
