export {
  documentClient,
  dynamoDbClient,
  type DynamoDBDocumentClient,
  lambdaClient,
  s3Client,
  secretsManagerClient,
  sqsClient,
  ssmClient,
} from './clients';
export { asFunction, type RecordedCall } from './call-record';
