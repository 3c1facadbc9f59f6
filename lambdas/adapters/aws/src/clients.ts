import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { S3Client } from '@aws-sdk/client-s3';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';
import type { AwsConfig } from '@pipeline/config';

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
 * AWS SDK v3 clients built from configuration: the endpoint is the stand-in's when one is configured and
 * AWS's otherwise, so the same handler code runs on AWS, LocalStack and the embedded local stack.
 */
export function dynamoDbClient(aws: AwsConfig): DynamoDBClient {
  return new DynamoDBClient({
    region: aws.region,
    endpoint: aws.endpoints.dynamodb,
    maxAttempts: 4,
    logger: QUIET,
  });
}

export function documentClient(aws: AwsConfig): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(dynamoDbClient(aws), {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
}

export function sqsClient(aws: AwsConfig): SQSClient {
  return new SQSClient({ region: aws.region, endpoint: aws.endpoints.sqs, maxAttempts: 4, logger: QUIET });
}

export function lambdaClient(aws: AwsConfig): LambdaClient {
  return new LambdaClient({
    region: aws.region,
    endpoint: aws.endpoints.lambda,
    maxAttempts: 2,
    logger: QUIET,
  });
}

export function s3Client(aws: AwsConfig): S3Client {
  return new S3Client({ region: aws.region, endpoint: aws.endpoints.s3, maxAttempts: 4, logger: QUIET });
}

export function ssmClient(aws: AwsConfig): SSMClient {
  return new SSMClient({ region: aws.region, endpoint: aws.endpoints.ssm, maxAttempts: 4, logger: QUIET });
}

export function secretsManagerClient(aws: AwsConfig): SecretsManagerClient {
  return new SecretsManagerClient({
    region: aws.region,
    endpoint: aws.endpoints.secretsmanager,
    maxAttempts: 4,
    logger: QUIET,
  });
}
