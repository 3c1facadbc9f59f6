/**
 * Test support for the signer handler's integration tests: fresh tables in DynamoDB Local wired into the
 * handler's environment (the CA endpoint a closed loopback port), and SQS records as the event source
 * mapping delivers them.
 */
import type { SQSRecord } from 'aws-lambda';
import { documentClient } from '@pipeline/adapters/aws';
import { RequestRepository } from '@pipeline/adapters/dynamodb';
import { loadAwsConfig } from '@pipeline/config';
import { TABLES } from '@pipeline/resources';
import { createTestTables } from '../../../../scripts/local/resources';

/** Points the handler (imported after this) at fresh tables; returns the requests repository. */
export async function signerTestEnvironment(): Promise<RequestRepository> {
  const tables = await createTestTables(['requests', 'keyPool', 'audit']);
  Object.assign(process.env, {
    [TABLES.requests.envVar]: tables.requests,
    [TABLES.keyPool.envVar]: tables.keyPool,
    [TABLES.audit.envVar]: tables.audit,
    AWS_ENDPOINT_URL_LAMBDA: 'http://127.0.0.1:9',
    POOL_EMPTY_POLICY: 'fallback',
  });
  return new RequestRepository(documentClient(loadAwsConfig(process.env)), { tableName: tables.requests });
}

export function sqsRecord(messageId: string, body: string, receiveCount = 1): SQSRecord {
  return {
    messageId,
    receiptHandle: `r-${messageId}`,
    body,
    attributes: { ApproximateReceiveCount: String(receiveCount) } as SQSRecord['attributes'],
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:local:000000000000:queue',
    awsRegion: 'eu-north-1',
  };
}
