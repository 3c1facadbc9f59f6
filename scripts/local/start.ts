/**
 * `npm start`: the whole pipeline locally (see runner/pipeline.ts). Prints the URL, the local API key and
 * a ready-to-paste curl example, logs one line per request, and shuts everything down on Ctrl-C.
 */
import { createHash } from 'node:crypto';
import { startLocalPipeline } from './runner/pipeline';
import { writeRunnerInfo } from './runner-info';

async function main(): Promise<void> {
  const pipeline = await startLocalPipeline({ persist: process.env.LOCAL_PERSIST === '1' });
  writeRunnerInfo({ url: pipeline.url, pid: process.pid, env: pipeline.env });
  const digest = createHash('sha256').update('hello').digest('base64');
  const body = JSON.stringify({
    digest,
    digestAlgorithm: 'SHA-256',
    keyType: 'EC-P256',
    signer: {
      commonName: 'Anna Andersson',
      givenName: 'Anna',
      surname: 'Andersson',
      serialNumber: '197001011234',
      country: 'SE',
    },
  });
  console.log(`
Signing pipeline is up: ${pipeline.url}
  API key (client "${pipeline.clients[0].clientId}"): ${pipeline.apiKey}   (stored in .local/api-keys.json)
  DynamoDB: ${pipeline.standIns.endpoints.dynamodb}   SQS: ${pipeline.standIns.endpoints.sqs}

Try it:
  curl -s -X POST ${pipeline.url}/sign-requests -H 'content-type: application/json' -H 'x-api-key: ${pipeline.apiKey}' \\
    -d '${body}'
  curl -s '${pipeline.url}/sign-requests/<id>?wait=10' -H 'x-api-key: ${pipeline.apiKey}'
  curl -s ${pipeline.url}/health

Ctrl-C stops everything.
`);
  let stopping = false;
  const shutdown = (): void => {
    if (stopping) return;
    stopping = true;
    console.log('stopping...');
    pipeline.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

main().catch((err: Error) => {
  console.error(`npm start failed: ${err.name}: ${err.message}`);
  process.exit(1);
});
