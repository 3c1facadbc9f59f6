/**
 * The call recorder against a loopback HTTP server standing in for S3 (a 404 NoSuchKey and a 200): each
 * call is one JSON line with the invoking function, the action, the resource, and a missing object marked.
 */
import { createServer, type Server } from 'node:http';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { AwsConfig } from '@pipeline/config';
import { asFunction, s3Client, type RecordedCall } from '../src';
import { itemsOf, resourcesOf } from '../src/call-record';

let server: Server;
let endpoint: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.method === 'GET') {
      res.writeHead(404, { 'content-type': 'application/xml' });
      res.end('<?xml version="1.0"?><Error><Code>NoSuchKey</Code><Message>missing</Message></Error>');
    } else {
      req.resume();
      req.on('end', () => res.writeHead(200, { etag: '"x"' }).end());
    }
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((done) => server.close(() => done())));

const saved = { ...process.env };
afterEach(() => {
  process.env = { ...saved };
});

function config(): AwsConfig {
  return { region: 'eu-north-1', endpoints: { s3: endpoint } } as unknown as AwsConfig;
}

const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };

it('records each call under the invoking function, a missing object marked', async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'calls-')), 'calls.jsonl');
  process.env.AWS_CALL_RECORD_FILE = file;
  process.env.AWS_ACCESS_KEY_ID = credentials.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = credentials.secretAccessKey;
  const client = s3Client(config());
  client.config.forcePathStyle = true;
  await asFunction('crl', async () => {
    await expect(
      client.send(new GetObjectCommand({ Bucket: 'pki', Key: 'issuing.crl' })),
    ).rejects.toMatchObject({
      name: 'NoSuchKey',
    });
    await client.send(new PutObjectCommand({ Bucket: 'pki', Key: 'issuing.crl', Body: 'crl' }));
  });
  const calls = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as RecordedCall);
  expect(calls).toEqual([
    {
      function: 'crl',
      service: 's3',
      action: 'GetObject',
      resources: ['pki/issuing.crl'],
      missingObject: true,
    },
    { function: 'crl', service: 's3', action: 'PutObject', resources: ['pki/issuing.crl'] },
  ]);
});

it('adds nothing without AWS_CALL_RECORD_FILE', async () => {
  const client = s3Client(config());
  client.config.forcePathStyle = true;
  await client.send(new PutObjectCommand({ Bucket: 'pki', Key: 'root.crl', Body: 'crl' }));
  expect(client.middlewareStack.identify().some((m) => m.startsWith('recordAwsCalls'))).toBe(false);
});

it('names the tables of batch and transaction inputs, queues, functions, secrets and parameters', () => {
  expect(
    resourcesOf({
      TransactItems: [{ Put: { TableName: 'audit' } }, { Update: { TableName: 'requests' } }],
    }),
  ).toEqual(['audit', 'requests']);
  expect(resourcesOf({ RequestItems: { pool: {}, audit: {} } })).toEqual(['pool', 'audit']);
  expect(resourcesOf({ QueueUrl: 'http://q/sign' })).toEqual(['http://q/sign']);
  expect(resourcesOf({ FunctionName: 'ca', Payload: 'secret-ish' })).toEqual(['ca']);
  expect(resourcesOf({ SecretId: 'arn:secret', Names: ['/a', '/b'] })).toEqual(['arn:secret', '/a', '/b']);
});

it('lists DynamoDB items as IAM authorizes them: a transaction by each item, a batch as the batch, a query on its index', () => {
  expect(
    itemsOf('TransactWriteItems', {
      TransactItems: [
        { Put: { TableName: 'audit', Item: { pk: 'CHAIN#7f3a', sk: '1' } } },
        { Update: { TableName: 'audit', Key: { pk: { S: 'CHECKPOINT#HEAD' } } } },
        { ConditionCheck: { TableName: 'certs', Key: { pk: 'SERIAL#0a1b' } } },
      ],
    }),
  ).toEqual([
    { table: 'audit', action: 'PutItem', key: 'CHAIN#x' },
    { table: 'audit', action: 'UpdateItem', key: 'CHECKPOINT#HEAD' },
    { table: 'certs', action: 'ConditionCheckItem', key: 'SERIAL#x' },
  ]);
  expect(
    itemsOf('BatchWriteItem', {
      RequestItems: {
        pool: [{ PutRequest: { Item: { pk: 'KEY#EC-P256#1' } } }, { DeleteRequest: { Key: {} } }],
      },
    }),
  ).toEqual([
    { table: 'pool', action: 'BatchWriteItem', key: 'KEY#x#x' },
    { table: 'pool', action: 'BatchWriteItem' },
  ]);
  expect(itemsOf('BatchGetItem', { RequestItems: { certs: { Keys: [{ pk: 'OWNER#req-1' }] } } })).toEqual([
    { table: 'certs', action: 'BatchGetItem', key: 'OWNER#x' },
  ]);
  expect(
    itemsOf('Query', {
      TableName: 'requests',
      IndexName: 'open',
      ExpressionAttributeValues: { ':pk': 'CHAIN#a' },
    }),
  ).toEqual([{ table: 'requests', action: 'Query', key: 'CHAIN#x', index: 'open' }]);
});
