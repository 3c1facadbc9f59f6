import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { AwsConfig } from '../../../config/src';

/**
 * AWS SDK v3 clients built from configuration: the endpoint is the stand-in's when one is configured and
 * AWS's otherwise, so the same handler code runs on AWS, LocalStack and the embedded local stack.
 */
export function dynamoDbClient(aws: AwsConfig): DynamoDBClient {
  return new DynamoDBClient({ region: aws.region, endpoint: aws.endpoints.dynamodb, maxAttempts: 4 });
}

export function documentClient(aws: AwsConfig): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(dynamoDbClient(aws), {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
}

export function sqsClient(aws: AwsConfig): SQSClient {
  return new SQSClient({ region: aws.region, endpoint: aws.endpoints.sqs, maxAttempts: 4 });
}

export function lambdaClient(aws: AwsConfig): LambdaClient {
  return new LambdaClient({ region: aws.region, endpoint: aws.endpoints.lambda, maxAttempts: 2 });
}

export function s3Client(aws: AwsConfig): S3Client {
  return new S3Client({ region: aws.region, endpoint: aws.endpoints.s3, maxAttempts: 4 });
}
