import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { S3Client } from '@aws-sdk/client-s3';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';
import type { AwsConfig } from '@pipeline/config';
import { recorded } from './call-record';

/**
 * The layers above the adapters hold a document client (to hand it to repositories) but import nothing
 * from the SDK themselves: they name its type through here.
 */
export type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * The SDK's default logger does nothing, yet its logging middleware calls `logger?.info?.(...)` with a
 * redacted copy of every command's input and output, built from the command's schema on every call (in
 * CPU profiles under load, more time than signing the request). A logger without `info` skips building
 * it; everything else stays a no-op, as the default is.
 */
type Logger = NonNullable<DynamoDBClientConfig['logger']>;

const QUIET: Logger = {
  trace: () => undefined,
  debug: () => undefined,
  warn: () => undefined,
  error: () => undefined,
} as Partial<Logger> as Logger;

/**
 * The options every client shares: the endpoint is the stand-in's when one is configured and AWS's
 * otherwise, so the same handler code runs on AWS, LocalStack and the embedded local stack.
 */
function options(aws: AwsConfig, service: keyof AwsConfig['endpoints'], maxAttempts = 4) {
  return { region: aws.region, endpoint: aws.endpoints[service], maxAttempts, logger: QUIET };
}

/** AWS SDK v3 clients built from configuration. */
export function dynamoDbClient(aws: AwsConfig): DynamoDBClient {
  return recorded(new DynamoDBClient(options(aws, 'dynamodb')), 'dynamodb');
}

export function documentClient(aws: AwsConfig): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(dynamoDbClient(aws), {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
}

export function sqsClient(aws: AwsConfig): SQSClient {
  return recorded(new SQSClient(options(aws, 'sqs')), 'sqs');
}

export function lambdaClient(aws: AwsConfig): LambdaClient {
  return recorded(new LambdaClient(options(aws, 'lambda', 2)), 'lambda');
}

export function s3Client(aws: AwsConfig): S3Client {
  return recorded(new S3Client(options(aws, 's3')), 's3');
}

export function ssmClient(aws: AwsConfig): SSMClient {
  return recorded(new SSMClient(options(aws, 'ssm')), 'ssm');
}

export function secretsManagerClient(aws: AwsConfig): SecretsManagerClient {
  return recorded(new SecretsManagerClient(options(aws, 'secretsmanager')), 'secretsmanager');
}
