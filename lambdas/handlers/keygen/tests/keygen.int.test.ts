/**
 * The keygen function against DynamoDB Local and SoftHSM: it plans from recorded demand, fills the pool,
 * records its own keygen rate, and stops generating once the pool holds its target.
 */
import { randomBytes } from 'node:crypto';
import type { Context } from 'aws-lambda';
import { createTestTables } from '../../../../scripts/local/resources';
import { restoreEnvAfterAll } from '../../../test-support/env';

restoreEnvAfterAll();

jest.setTimeout(120_000);

function context(ms: number): Context {
  const deadline = Date.now() + ms;
  return { getRemainingTimeInMillis: () => deadline - Date.now() } as Context;
}

test('forecast policy: plans from demand history, fills, measures its keygen rate, then holds', async () => {
  const tables = await createTestTables(['keyPool', 'demand', 'audit']);
  Object.assign(process.env, {
    POOL_TABLE_NAME: tables.keyPool,
    DEMAND_TABLE_NAME: tables.demand,
    AUDIT_TABLE_NAME: tables.audit,
    KEYGEN_POLICY: 'forecast',
    KEYGEN_KEY_TYPES: 'EC-P256',
    FORECAST_HORIZON_DAYS: '1',
    POOL_LOW_WATER: '',
    RUN_ID: randomBytes(2).toString('hex'),
  });
  const { documentClient } = await import('@pipeline/adapters/aws');
  const { loadAwsConfig } = await import('@pipeline/config');
  const { DemandRepository } = await import('../../../adapters/dynamodb/src/demand-repository');
  const demand = new DemandRepository(documentClient(loadAwsConfig(process.env)), {
    tableName: tables.demand,
  });
  // Two hours ago, 40 EC-P256 requests: a little history; the cold-start profile fills the rest.
  await demand.record('EC-P256', Date.now() - 2 * 3600_000, 40);

  const { handler } = await import('../index');
  const first = await handler({}, context(60_000));
  expect(first.policy).toBe('forecast');
  const target = first.targets['EC-P256']!;
  expect(target).toBeGreaterThan(0);
  expect(first.generated['EC-P256']).toBe(target);
  expect(first.available['EC-P256']).toBe(target);
  expect(first.keygenMsPerKey['EC-P256']).toBeGreaterThan(0);
  expect(first.targets['RSA-2048'] ?? 0).toBe(0);

  // One bundle of keys disappears behind the counter's back, as a DynamoDB TTL delete does: the next run
  // recounts, sees the gap and fills it.
  const { QueryCommand, DeleteCommand } = await import('@aws-sdk/lib-dynamodb');
  const doc = documentClient(loadAwsConfig(process.env));
  let victim: Record<string, unknown> | undefined;
  for (let shard = 0; !victim; shard++) {
    const items = await doc.send(
      new QueryCommand({
        TableName: tables.keyPool,
        KeyConditionExpression: 'pk = :pk AND sk > :low',
        ExpressionAttributeValues: { ':pk': `KEY#EC-P256#${shard}`, ':low': '0' },
        Limit: 1,
      }),
    );
    victim = items.Items?.[0];
  }
  await doc.send(new DeleteCommand({ TableName: tables.keyPool, Key: { pk: victim.pk, sk: victim.sk } }));

  const second = await handler({}, context(60_000));
  expect(victim.keyCount).toBeGreaterThan(1);
  expect(second.generated['EC-P256'] ?? 0).toBe(
    Math.max(0, second.targets['EC-P256']! - target) + Number(victim.keyCount),
  );
  expect(second.available['EC-P256']).toBe(second.targets['EC-P256']);

  // Every stored batch is in the audit log, signed as its chain's head by the audit key; the log verifies.
  const { AuditRepository } = await import('../../../adapters/dynamodb/src/audit-repository');
  const { eventsOf, auditPublicKey } = await import('@pipeline/core/audit');
  const { verifyAuditStore } = await import('@pipeline/audit');
  const { loadAuditConfig } = await import('@pipeline/config');
  const { readFileSync } = await import('node:fs');
  const { LOCAL_DIR } = await import('../../../../scripts/local/paths');
  const store = new AuditRepository(documentClient(loadAwsConfig(process.env)), { tableName: tables.audit });
  const batches = eventsOf(await store.readAll()).filter((e) => e.type === 'pool.batch-generated');
  const generated = (first.generated['EC-P256'] ?? 0) + (second.generated['EC-P256'] ?? 0);
  expect(batches.reduce((sum, e) => sum + (e.type === 'pool.batch-generated' ? e.count : 0), 0)).toBe(
    generated,
  );
  const publicKey = auditPublicKey(readFileSync(`${LOCAL_DIR}/audit/audit-key.pem`, 'utf8'));
  const report = await verifyAuditStore(store, loadAuditConfig(process.env).chains, publicKey);
  expect(report.intact).toBe(true);
});
