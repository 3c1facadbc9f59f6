import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kms from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';
import { TABLES, type TableKey } from '@pipeline/resources';
import type { KeyAttribute, TableDefinition } from '@pipeline/resources';

/**
 * Every table in TABLES (the definitions the local runner uses too), created the same way: on-demand,
 * point-in-time recovery, a customer-managed key, TTL where defined, retained and deletion-protected
 * (the pool's wrapped keys and the issued-certificate record must outlive a stack).
 */
export class Tables extends Construct {
  public readonly key: kms.Key;
  private readonly tables = new Map<TableKey, dynamodb.Table>();

  public constructor(scope: Construct, id: string) {
    super(scope, id);
    this.key = new kms.Key(this, 'Key', {
      description: 'Signing pipeline DynamoDB tables',
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    for (const [name, definition] of Object.entries(TABLES) as [TableKey, TableDefinition][]) {
      this.tables.set(name, this.createTable(definition));
    }
  }

  public table(name: TableKey): dynamodb.Table {
    const table = this.tables.get(name);
    if (!table) throw new Error(`no table ${name}`);
    return table;
  }

  public entries(): [TableKey, dynamodb.Table][] {
    return [...this.tables.entries()];
  }

  private createTable(definition: TableDefinition): dynamodb.Table {
    const table = new dynamodb.Table(this, definition.id, {
      partitionKey: attribute(definition.partitionKey),
      sortKey: definition.sortKey ? attribute(definition.sortKey) : undefined,
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: this.key,
      timeToLiveAttribute: definition.ttlAttribute,
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    for (const index of definition.globalSecondaryIndexes ?? []) {
      table.addGlobalSecondaryIndex({
        indexName: index.indexName,
        partitionKey: attribute(index.partitionKey),
        sortKey: index.sortKey ? attribute(index.sortKey) : undefined,
        projectionType:
          index.projection === 'KEYS_ONLY' ? dynamodb.ProjectionType.KEYS_ONLY : dynamodb.ProjectionType.ALL,
      });
    }
    return table;
  }
}

const TYPES: Record<KeyAttribute['type'], dynamodb.AttributeType> = {
  S: dynamodb.AttributeType.STRING,
  N: dynamodb.AttributeType.NUMBER,
  B: dynamodb.AttributeType.BINARY,
};

function attribute(a: KeyAttribute): dynamodb.Attribute {
  return { name: a.name, type: TYPES[a.type] };
}
