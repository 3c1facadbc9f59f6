/** Plain-data resource definitions: read by the CDK app (to create) and the local runner (to create locally). */

export type AttributeType = 'S' | 'N' | 'B';

export interface KeyAttribute {
  readonly name: string;
  readonly type: AttributeType;
}

export interface IndexDefinition {
  readonly indexName: string;
  readonly partitionKey: KeyAttribute;
  readonly sortKey?: KeyAttribute;
  /** Attributes copied into the index: all (default), or only the keys (cheaper writes). */
  readonly projection?: 'ALL' | 'KEYS_ONLY';
}

export interface TableDefinition {
  /** CDK construct id and a stable logical name. */
  readonly id: string;
  /** Environment variable that carries the physical table name to the handlers. */
  readonly envVar: string;
  /** Physical name used locally (and when the variable is unset). */
  readonly localName: string;
  readonly partitionKey: KeyAttribute;
  readonly sortKey?: KeyAttribute;
  /** TTL attribute (epoch seconds). */
  readonly ttlAttribute?: string;
  readonly globalSecondaryIndexes?: readonly IndexDefinition[];
}

export interface QueueDefinition {
  readonly id: string;
  readonly envVar: string;
  readonly localName: string;
  readonly visibilityTimeoutSeconds: number;
  /** Receives before a message moves to the dead-letter queue. */
  readonly maxReceiveCount: number;
  readonly deadLetter: { readonly id: string; readonly envVar: string; readonly localName: string };
}
