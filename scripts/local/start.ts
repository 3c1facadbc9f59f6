/**
 * `npm start`: the whole pipeline locally (see runner/pipeline.ts) and the demo e-service page
 * (demo-eservice.ts) on loopback. Prints the URLs, the local API key and the first steps to try (sign a
 * PDF, verify it), one line per request and the warnings and errors; the functions' JSON logs go to a
 * file (start-console.ts). Shuts everything down on Ctrl-C.
 */
import { keygenTargets, parseKeyCounts } from '@pipeline/config';
import type { KeyType } from '@pipeline/core/shared';
import { call } from './client';
import { startLocalDemo } from './demo-eservice';
import { startLocalPipeline, type LocalPipeline } from './runner/pipeline';
import { join } from 'node:path';
import { LOCAL_DIR } from './paths';
import { createStartConsole } from './start-console';
import { warmUp, warmUpSummary } from './warm-up';
import { writeRunnerInfo } from './runner-info';

/**
 * Keys per type the initial fill must have stored before the pipeline reports ready, so the first
 * requests do not pay an on-the-fly keygen: LOCAL_READY_MIN_KEYS ("RSA-2048=20,EC-P256=20"; 0 = do not
 * wait), by default the smaller of 20 and each type's pool target.
 */
function readyMinimum(): Partial<Record<KeyType, number>> {
  const raw = process.env.LOCAL_READY_MIN_KEYS;
  if (raw !== undefined) return raw === '0' ? {} : parseKeyCounts(raw, 'LOCAL_READY_MIN_KEYS');
  const targets = keygenTargets(process.env);
  return Object.fromEntries(
    Object.entries(targets).map(([type, target]) => [type, Math.min(20, target ?? 0)]),
  );
}

/** Waits (up to LOCAL_READY_TIMEOUT_SECONDS, 120) for the minimum; returns the pool as last seen. */
async function waitForInitialFill(url: string, apiKey: string): Promise<Record<string, number>> {
  const minimum = readyMinimum();
  const deadline = Date.now() + Number(process.env.LOCAL_READY_TIMEOUT_SECONDS ?? 120) * 1000;
  let lastLog = 0;
  for (;;) {
    const health = await call<{ pool?: Record<string, number> }>(`${url}/health`, { apiKey }).catch(
      () => undefined,
    );
    const pool = health?.body.pool ?? {};
    const short = Object.entries(minimum).filter(([type, min]) => (pool[type] ?? 0) < (min ?? 0));
    if (short.length === 0) return pool;
    if (Date.now() > deadline) {
      console.log(
        `initial pool fill still short after the wait (${short.map(([t]) => t).join(', ')}): starting anyway`,
      );
      return pool;
    }
    if (Date.now() - lastLog > 2000) {
      lastLog = Date.now();
      console.log(
        `waiting for the initial pool fill: ${short.map(([type, min]) => `${type} ${pool[type] ?? 0}/${min}`).join(', ')}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** Pooled keys of the warm-up's type it leaves untouched (admission keeps a reserve per type). */
const WARM_UP_KEY_MARGIN = 30;

/**
 * Self-test requests until the pipeline is warm (warm-up.ts): LOCAL_WARMUP_SECONDS at most (60; 0 = none)
 * at LOCAL_WARMUP_RATE (10/s), with the pooled key type that has the most keys. Returns the banner's line.
 */
async function warmUpBeforeReady(pipeline: LocalPipeline, pool: Record<string, number>): Promise<string> {
  const maxSeconds = Number(process.env.LOCAL_WARMUP_SECONDS ?? 60);
  const rate = Number(process.env.LOCAL_WARMUP_RATE ?? 10);
  if (maxSeconds <= 0) return 'off (LOCAL_WARMUP_SECONDS=0): the first requests meet cold processes';
  const trustedClient = pipeline.env.IDENTITY_MODE === 'trusted-client';
  if (!trustedClient && !pipeline.env.LOCAL_IDP_ISSUER) return 'skipped: the identity provider is not local';
  const [keyType, keys] = Object.entries(pool).sort((a, b) => b[1] - a[1])[0] ?? [];
  if (!keyType || keys - WARM_UP_KEY_MARGIN < rate * 5) return `skipped: too few pooled keys (${keys ?? 0})`;
  const limits = { maxSeconds, maxRequests: keys - WARM_UP_KEY_MARGIN, boundMs: 300 };
  console.log(
    `warming up: self-test requests at ${rate}/s (${keyType}) until the p99 is within ${limits.boundMs} ms (at most ${maxSeconds} s, ${limits.maxRequests} keys) ...`,
  );
  const result = await warmUp({
    url: pipeline.url,
    apiKey: pipeline.apiKey,
    credentials: pipeline.clients[0],
    keyType: keyType as KeyType,
    vouchedBy: trustedClient ? pipeline.clients[0].clientId : undefined,
    rate,
    // Leave the pool a margin: a drained type would meet admission's reserve (429/503) mid-warm-up.
    ...limits,
    minSeconds: 5,
  });
  return warmUpSummary(result, limits);
}

async function main(): Promise<void> {
  // A stable issuer URL across restarts (tests take free ports instead).
  process.env.LOCAL_IDP_PORT ??= '8081';
  // The DSS-Ext door with its local SAML IdP, federation and registered test e-service.
  process.env.LOCAL_DSSEXT ??= '1';
  let announced = false;
  const output = createStartConsole(process.env.LOCAL_LOG_FILE || join(LOCAL_DIR, 'npm-start.log'));
  output.captureProcessOutput();
  console.log(`npm start: the functions' logs (LOG_LEVEL and above) go to ${output.file}`);
  // Health says `starting` (503) until the banner's conditions hold: a script waiting for it never sends
  // its first requests into an empty pool or cold processes.
  const pipeline = await startLocalPipeline({
    persist: process.env.LOCAL_PERSIST === '1',
    startsReady: false,
    // Several nodes sharing one set of stand-ins (a test's) name their tables and queues apart.
    resourcePrefix: process.env.LOCAL_RESOURCE_PREFIX,
    log: output.log,
    // Before the banner the requests are the runner's own (health polls, the warm-up): file only.
    accessLog: (line) => (announced ? output.show(line) : output.fileOnly(line)),
    runLog: output.fileOnly,
  });
  writeRunnerInfo({ url: pipeline.url, pid: process.pid, env: pipeline.env });
  // The demo e-service page, where there is an identity provider to log citizens in at.
  const issuer = pipeline.env.LOCAL_IDP_ISSUER;
  const demo = issuer
    ? await startLocalDemo({
        apiUrl: pipeline.url,
        apiKey: pipeline.apiKey,
        credentials: pipeline.clients[0],
        issuer,
        port: Number(process.env.LOCAL_DEMO_PORT ?? 8082),
        ...(pipeline.dssExt ? { dssExt: pipeline.dssExt } : {}),
        log: (line) => console.log(line),
      }).catch((err: Error) => {
        console.log(`demo e-service page not started: ${err.message} (LOCAL_DEMO_PORT picks another port)`);
        return undefined;
      })
    : undefined;
  const filled = await waitForInitialFill(pipeline.url, pipeline.apiKey);
  const warm = await warmUpBeforeReady(pipeline, filled);
  // The self-test signatures took pool keys: fill again, so the banner's pool (and health's `ok`) hold
  // for the first real requests too. The first run may join one that started before the warm-up; the
  // second is a fresh one (quick when nothing is missing).
  await pipeline.runKeygen();
  await pipeline.runKeygen();
  const pool = await waitForInitialFill(pipeline.url, pipeline.apiKey);
  pipeline.markReady();
  announced = true;
  const targets = keygenTargets(process.env);
  console.log(`
Signing pipeline is up: ${pipeline.url}
  API key (client "${pipeline.clients[0].clientId}"): ${pipeline.apiKey}   (stored in .local/api-keys.json)
  DynamoDB: ${pipeline.standIns.endpoints.dynamodb}   SQS: ${pipeline.standIns.endpoints.sqs}
  OpenID Provider (test citizens): ${pipeline.env.LOCAL_IDP_ISSUER ?? 'not started'}
  Demo e-service (sign a PDF in your browser): ${demo ? `${demo.url}/` : 'not started'}
  DSS-Ext (Swedish eID sign requests): ${
    pipeline.dssExt
      ? `POST ${pipeline.dssExt.url}/sign   SP metadata ${pipeline.dssExt.spMetadataUrl}   SAML IdP ${pipeline.dssExt.idp.url}/saml/idp/metadata
    registered e-service ${pipeline.dssExt.eservice.entityId}: key .local/dss-ext/eservice/key.pem, return URL ${pipeline.dssExt.eservice.returnUrls.join(', ')} (docs/dss-ext.md)`
      : 'not started'
  }
  CSC API v2: ${pipeline.csc ? `${pipeline.csc.url}/info` : 'not started'}${
    pipeline.csc?.client
      ? `   (client "${pipeline.csc.client.clientId}", secret ${pipeline.csc.client.secret}, redirect ${pipeline.csc.client.redirectUri}; docs/csc.md)`
      : ''
  }
  Key pool: ${Object.entries(targets)
    .map(
      ([type, target]) =>
        `${type} ${pool[type] ?? 0}/${target}${(pool[type] ?? 0) < (target ?? 0) ? ' (filling)' : ''}`,
    )
    .join(', ')}
  Warm-up: ${warm}
  Log: one line per request here, warnings and errors too; the functions' JSON logs in ${output.file}

Try it (a second terminal, this directory; README.md "First session" explains each step):
  npx tsx -e "require('fs').writeFileSync('hello.pdf', require('./scripts/local/verify/pdf-validator').minimalPdf('Hello'))"
  npm run sign -- hello.pdf --pdf -o signed.pdf     # logs a test citizen in at the OpenID Provider, signs${
    demo
      ? `\n  or open ${demo.url}/ in a browser: choose the PDF, approve the text at the provider, download`
      : ''
  }
  npm run verify-pdf -- signed.pdf                   # the EU DSS validator, trusting .local/ca/root.pem
  curl -s ${pipeline.url}/health

Ctrl-C stops everything.
`);
  let stopping = false;
  const shutdown = (): void => {
    if (stopping) return;
    stopping = true;
    console.log('stopping...');
    Promise.all([demo?.stop(), pipeline.stop()])
      .finally(() => output.close())
      .then(
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
