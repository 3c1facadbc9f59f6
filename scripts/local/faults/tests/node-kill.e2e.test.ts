/**
 * The whole local node (`npm start`: runner, consumers, CA, DynamoDB Local, ElasticMQ) SIGKILLed mid-load
 * and started again with LOCAL_PERSIST=1: the tables and the queue with its messages survive, so the
 * restarted node drains its backlog by itself. The request whose attempt died with the node holds a live
 * lease (the default minute) that outlasts the queue's five receives (2 s visibility): its redeliveries
 * hold the message until the lease ends instead of spending the receives, so it finishes within its
 * lease plus seconds. Bound: every accepted request ends within LEASE + RECOVERY_SLACK of the kill, far
 * under the reconciler's quiet time (5 minutes locally), so the queue, not the backstop, brought the work
 * back. Nothing is signed twice and the audit log stays intact. An attempt the kill cut short after its
 * certificate and before its logged signature signed nothing that left: its takeover gets a replacement
 * (the first certificate revoked `superseded`), so every accepted request ends signed.
 *
 * While the node starts, health answers `starting` (503) until the banner, `ok` after it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '@pipeline/adapters/aws';
import { RequestRepository } from '@pipeline/adapters/dynamodb';
import { loadAwsConfig } from '@pipeline/config';
import { TABLES } from '@pipeline/resources';
import { loadApiClients } from '../../runner/api-keys';
import { call, sampleRequest, sampleRequests, type SignRequestView } from '../../client';
import { ROOT } from '../../paths';
import type { RunnerInfo } from '../../runner-info';
import {
  expectNoneDuplicated,
  restoreTruncatedTokenFiles,
  runAll,
  scanCertificates,
  sleep,
  snapshotTokenFiles,
  submit,
  supersededChains,
  waitForTerminal,
  type Submitted,
} from '../harness';

jest.setTimeout(600_000);

const REQUESTS = 160;
/** The signer's attempt lease: the default (SIGN_ATTEMPT_LEASE_SECONDS). */
const LEASE_SECONDS = 60;
/** From the end of the dead attempt's lease to the last accepted request ending (the restart included). */
const RECOVERY_SLACK_MS = 30_000;

const dir = mkdtempSync(join(tmpdir(), 'node-kill-'));
const tokenFiles = snapshotTokenFiles();
let node: ChildProcess | undefined;
const lines: string[] = [];

afterAll(() => {
  if (node && node.exitCode === null && node.pid) process.kill(-node.pid, 'SIGKILL');
  restoreTruncatedTokenFiles(tokenFiles);
  rmSync(dir, { recursive: true, force: true });
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** `npm start` in a process group of its own (so one signal reaches every process of the node). */
async function startNode(port: number): Promise<{ child: ChildProcess; info: RunnerInfo; upAt: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'local', 'start.ts')], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      LOCAL_PERSIST: '1',
      LOCAL_PERSIST_DIR: dir,
      LOCAL_RUNNER_INFO_FILE: join(dir, 'runner.json'),
      LOCAL_LOG_FILE: join(dir, 'npm-start.log'),
      PORT: String(port),
      // The Jest set-up's stand-ins are not this node's: it starts and keeps its own.
      AWS_ENDPOINT_URL_DYNAMODB: '',
      AWS_ENDPOINT_URL_SQS: '',
      POOL_TARGETS: `EC-P256=${REQUESTS}`,
      LOCAL_READY_MIN_KEYS: 'EC-P256=60',
      // This test counts the node's requests: no self-test warm-up before the banner.
      LOCAL_WARMUP_SECONDS: '0',
      // One slow consumer (one record at a time), so a backlog builds up before the kill.
      LOCAL_CONSUMERS: '1',
      LOCAL_POLLER_CONCURRENCY: '1',
      SIGNER_CONCURRENCY: '1',
      // Five receives take about 10 s, far less than the lease the dead attempt left behind.
      LOCAL_VISIBILITY_TIMEOUT_SECONDS: '2',
      SIGN_ATTEMPT_LEASE_SECONDS: String(LEASE_SECONDS),
      LOCAL_KEYGEN_INTERVAL_SECONDS: '3600',
      // EC-P384 has no pool here: its keys are generated on the fly, and take 5 s; each of its signatures
      // (the CSR's, then the digest's) 2 s more, so the node can die after its certificate.
      HSM_KEYGEN_LATENCY_MS: 'EC-P384=5000',
      HSM_SIGN_LATENCY_MS: 'EC-P384=2000',
      LOCAL_ACCESS_LOG: '0',
      LOG_LEVEL: 'WARN',
    },
  });
  const up = new Promise<number>((resolve, reject) => {
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        lines.push(line);
        if (line.startsWith('Signing pipeline is up')) resolve(Date.now());
      });
    }
    child.once('exit', (code) => reject(new Error(`the node exited (${code}) before it was up`)));
  });
  const upAt = await up;
  const info = JSON.parse(readFileSync(join(dir, 'runner.json'), 'utf8')) as RunnerInfo;
  return { child, info, upAt };
}

/** A client of the node's own DynamoDB (its endpoint from runner.json; the Jest stand-ins are not its). */
function nodeDocumentClient(info: RunnerInfo): ReturnType<typeof documentClient> {
  const saved = { ...process.env };
  process.env.AWS_ENDPOINT_URL_DYNAMODB = info.env.AWS_ENDPOINT_URL_DYNAMODB;
  try {
    return documentClient(loadAwsConfig(process.env));
  } finally {
    process.env = saved;
  }
}

/** Whether the CA recorded a certificate for the request (its REQ# item) in the node's table. */
async function certificateOf(
  doc: ReturnType<typeof documentClient>,
  info: RunnerInfo,
  requestId: string,
): Promise<boolean> {
  const out = await doc.send(
    new GetCommand({
      TableName: info.env[TABLES.certificates.envVar],
      Key: { pk: `REQ#${requestId}` },
      ConsistentRead: true,
    }),
  );
  return out.Item !== undefined;
}

interface HealthAnswer {
  readonly at: number;
  readonly status: number;
  readonly body: unknown;
}

/** Polls GET /health as a load balancer would (anonymous, every 100 ms) until stopped; answers only. */
function watchHealth(port: number): { stop(): Promise<HealthAnswer[]> } {
  const answers: HealthAnswer[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const res = await call(`http://127.0.0.1:${port}/v1/health`).catch(() => undefined);
      if (res) answers.push({ at: Date.now(), status: res.status, body: res.body });
      await sleep(100);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return answers;
    },
  };
}

/** Waits until every consumer of the node has logged in to the HSM (a kill during a login could truncate the token). */
async function consumersReady(count: number, from: number): Promise<void> {
  while (lines.slice(from).filter((l) => l.endsWith('consumer ready')).length < count) await sleep(100);
}

test('SIGKILL of the whole node mid-load: after a restart with LOCAL_PERSIST=1 every accepted request ends, promptly', async () => {
  const port = await freePort();
  const from = lines.length;
  const watch = watchHealth(port);
  const first = await startNode(port);
  node = first.child;
  await sleep(500);
  const answers = await watch.stop();
  // Not ready before the banner (tables, the initial fill): 503 starting; ready after it.
  const before = answers.filter((a) => a.status !== 200);
  const firstOk = answers.find((a) => a.status === 200);
  expect(before.length).toBeGreaterThan(0);
  expect(new Set(before.map((a) => `${a.status} ${JSON.stringify(a.body)}`))).toEqual(
    new Set(['503 {"status":"starting"}']),
  );
  // Answers come in order: every 503 before the first 200, which comes with the banner (markReady just
  // before it is printed), not before.
  expect(Math.max(...before.map((a) => a.at))).toBeLessThanOrEqual(firstOk!.at);
  expect(firstOk!.at).toBeGreaterThanOrEqual(first.upAt - 1000);
  expect(answers.filter((a) => a.at > firstOk!.at).every((a) => a.status === 200)).toBe(true);
  await consumersReady(1, from);
  const url = `http://127.0.0.1:${port}/v1`;
  const apiKey = loadApiClients()[0].apiKey;
  const requests = await sampleRequests(REQUESTS, (i) => sampleRequest('EC-P256', i));
  const slowRequest = await sampleRequest('EC-P384', REQUESTS);

  // Requests arrive at 40/s, faster than the one consumer signs them (it keeps up with 20/s); after 2.5 s
  // and one slow request the whole node dies at once.
  const accepted: Submitted[] = [];
  const start = Date.now();
  let killed = false;
  const submitting = runAll(requests, 8, async (request, i) => {
    await sleep(start + i * 25 - Date.now());
    if (killed) return;
    const s = await submit(url, apiKey, request, Date.now() + 1000).catch(() => undefined);
    if (s) accepted.push(s);
  });
  await sleep(2500);
  // One request whose attempt is sure to be cut short after its certificate and before its signature
  // left: its key type has no pool, so its key is generated on the fly, slowly (HSM_KEYGEN_LATENCY_MS),
  // and signs slowly (HSM_SIGN_LATENCY_MS); the node dies once the CA recorded its certificate, while the
  // document's signature is under way.
  const slow = await submit(url, apiKey, slowRequest, Date.now() + 5000);
  accepted.push(slow);
  const startedBy = Date.now() + 30_000;
  while (
    (await call<SignRequestView>(`${url}/sign-requests/${slow.id}`, { apiKey })).body.status !== 'signing'
  ) {
    if (Date.now() > startedBy) throw new Error('the slow request was not started in time');
    await sleep(50);
  }
  killed = true;
  // The backlog the node dies with: accepted, not signed yet (so there is work to bring back). Counted
  // while the slow request's key is still being made (the one consumer signs nothing else meanwhile).
  const stillOpen = async (): Promise<number> =>
    (
      await runAll([...accepted], 8, async (s) => {
        const res = await call<SignRequestView>(`${url}/sign-requests/${s.id}`, { apiKey });
        return !['signed', 'failed'].includes(res.body.status);
      })
    ).filter(Boolean).length;
  const pending = await stillOpen();
  // Then the kill, as soon as the CA has recorded the slow request's certificate (its document's
  // signature then takes 2 s).
  const certifiedBy = Date.now() + 30_000;
  const firstDoc = nodeDocumentClient(first.info);
  try {
    while (!(await certificateOf(firstDoc, first.info, slow.id))) {
      if (Date.now() > certifiedBy) throw new Error('the slow request was not certified in time');
      await sleep(50);
    }
  } finally {
    firstDoc.destroy();
  }
  process.kill(-node.pid!, 'SIGKILL');
  const killedAt = Date.now();
  await new Promise((resolve) => node!.once('exit', resolve));
  await submitting;
  expect(restoreTruncatedTokenFiles(tokenFiles)).toEqual([]);

  expect(pending).toBeGreaterThan(5);

  // Same port, same data: the restarted node finds its tables, its queue and the messages in it.
  const restartedAt = Date.now();
  ({ child: node } = await startNode(port));
  const bound = killedAt + LEASE_SECONDS * 1000 + RECOVERY_SLACK_MS;
  const views = await waitForTerminal(
    url,
    apiKey,
    accepted.map((s) => s.id),
    bound,
  );
  const recoveredAt = Date.now();
  const open = accepted.filter((s) => !['signed', 'failed'].includes(views.get(s.id)?.status ?? ''));
  expect(open.map((s) => `${s.id}: ${views.get(s.id)?.status}`)).toEqual([]);
  expect(recoveredAt).toBeLessThan(bound);
  const failed = accepted.filter((s) => views.get(s.id)?.status === 'failed');
  expect(failed.map((s) => views.get(s.id)?.error?.code)).toEqual([]);

  // Read the node's own tables: one certificate per request, the audit log intact, no key used twice.
  const info = JSON.parse(readFileSync(join(dir, 'runner.json'), 'utf8')) as RunnerInfo;
  const saved = { ...process.env };
  Object.assign(process.env, {
    AWS_ENDPOINT_URL_DYNAMODB: info.env.AWS_ENDPOINT_URL_DYNAMODB,
    [TABLES.certificates.envVar]: info.env[TABLES.certificates.envVar],
    [TABLES.audit.envVar]: info.env[TABLES.audit.envVar],
  });
  const doc = documentClient(loadAwsConfig(process.env));
  let takenOver = 0;
  let replaced = 0;
  try {
    await expectNoneDuplicated(doc, accepted, views);
    // An attempt the kill cut short after its certificate and before its logged signature: its takeover
    // got a replacement (the serial before it revoked `superseded`) and signed with it.
    const chains = supersededChains(await scanCertificates(doc));
    expect(chains.filter((c) => views.get(c.requestId)?.certificateSerial !== c.serials.at(-1))).toEqual([]);
    replaced = chains.length;
    // Not the reconciler's doing: no request was requeued.
    const records = new RequestRepository(doc, { tableName: info.env[TABLES.requests.envVar] });
    const stored = await runAll(accepted, 8, async (s) => records.get(s.id));
    expect(stored.filter((r) => (r?.requeues ?? 0) > 0).map((r) => r?.id)).toEqual([]);
    // The attempt the kill cut short was taken over once its lease ended: a second attempt signed it.
    takenOver = stored.filter((r) => (r?.attempts ?? 0) > 1).length;
    expect(stored.find((r) => r?.id === slow.id)).toMatchObject({ status: 'signed', attempts: 2 });
    // ... with a replacement: the dead attempt's certificate signed nothing that left.
    expect(chains.map((c) => c.requestId)).toContain(slow.id);
  } finally {
    doc.destroy();
    process.env = saved;
  }
  console.log(
    `node kill: ${accepted.length} accepted before the kill, ${pending} still open at the restart, ${takenOver} taken over ` +
      `(${replaced} with a replacement certificate); ` +
      `restarted ${restartedAt - killedAt} ms after the kill, all ended ${recoveredAt - restartedAt} ms after it ` +
      `(time to recovery ${recoveredAt - killedAt} ms after the kill; lease ${LEASE_SECONDS} s, bound ${bound - killedAt} ms); ` +
      `health: ${before.length} answers 'starting' before the banner`,
  );
});
