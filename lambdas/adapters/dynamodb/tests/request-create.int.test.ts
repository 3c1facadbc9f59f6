/** Creating a request: a conditional write that answers whether it wrote, and never overwrites. */
import { documentClient } from '@pipeline/adapters/aws';
import { loadAwsConfig } from '@pipeline/config';
import { createTestTables } from '../../../../scripts/local/resources';
import { sampleSignRequestRecord } from '../../../../scripts/local/sample-sign-request';
import { RequestRepository } from '../src';

let repo: RequestRepository;

beforeAll(async () => {
  const tables = await createTestTables(['requests']);
  repo = new RequestRepository(documentClient(loadAwsConfig(process.env)), { tableName: tables.requests });
});

test('a new id is written (true); the same id again is not (false) and the first record stays', async () => {
  const first = sampleSignRequestRecord({ clientId: 'client-a' });
  expect(await repo.create(first)).toBe(true);
  expect(await repo.create({ ...first, clientId: 'client-b', receivedAt: first.receivedAt + 1 })).toBe(false);
  expect(await repo.get(first.id)).toMatchObject({ clientId: 'client-a', receivedAt: first.receivedAt });
});
