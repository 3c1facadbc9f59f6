/**
 * Where a local audit table's checkpoints are anchored: a directory per table *instance*, named by the
 * table and its creation time. DynamoDB Local forgets its tables between runs (unless LOCAL_PERSIST), the
 * anchors directory does not: anchors of a table that no longer exists would contradict the new one, so
 * each new table gets a new directory and those of its predecessors are removed.
 */
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LOCAL_DIR } from './paths';

export const LOCAL_ANCHORS_DIR = join(LOCAL_DIR, 'audit', 'anchors');

export async function localAnchorDir(client: DynamoDBClient, tableName: string): Promise<string> {
  const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
  const created = Table?.CreationDateTime?.getTime();
  if (created === undefined) throw new Error(`table ${tableName} has no creation time`);
  const name = `${tableName}-${created}`;
  let siblings: string[] = [];
  try {
    siblings = readdirSync(LOCAL_ANCHORS_DIR);
  } catch {
    // none yet
  }
  for (const sibling of siblings) {
    if (
      sibling !== name &&
      sibling.startsWith(`${tableName}-`) &&
      /^\d+$/.test(sibling.slice(tableName.length + 1))
    ) {
      rmSync(join(LOCAL_ANCHORS_DIR, sibling), { recursive: true, force: true });
    }
  }
  return join(LOCAL_ANCHORS_DIR, name);
}
