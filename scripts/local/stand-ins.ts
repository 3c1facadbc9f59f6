/**
 * Local AWS stand-ins: DynamoDB Local and ElasticMQ as child processes on loopback with free ports.
 * When AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_DYNAMODB / _SQS) already names an endpoint (LocalStack or
 * another running stand-in), that endpoint is used and nothing is started for that service.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { LOCAL_DIR } from './paths';

const LOOPBACK_DYNAMODB = join(__dirname, 'java', 'LoopbackDynamoDb.java');

export interface StandInEndpoints {
  readonly dynamodb: string;
  readonly sqs: string;
}

export type StandInName = 'DynamoDB Local' | 'ElasticMQ';

export interface StandIns {
  readonly endpoints: StandInEndpoints;
  /** Names of the stand-ins this process started (empty when all endpoints were configured). */
  readonly started: readonly StandInName[];
  stop(): Promise<void>;
  /**
   * Stops one stand-in this process started (an outage; fault tests). Its port stays reserved for
   * startService; its data survives only when it was given a data directory.
   */
  stopService(name: StandInName): Promise<void>;
  /** Starts a stopped stand-in again on the same port with the same data, and waits until it answers. */
  startService(name: StandInName): Promise<void>;
  /** Environment for processes that should use these endpoints (and dummy local credentials). */
  env(): Record<string, string>;
}

export interface StandInOptions {
  /** Keep DynamoDB data in this directory instead of memory (the local runner keeps its pool). */
  readonly dynamodbDataDir?: string;
  /**
   * Keep ElasticMQ queues and messages (messages-storage, H2) in this directory, so a restarted ElasticMQ
   * still holds every queue and message (in-flight ones become visible again, as after a visibility timeout).
   */
  readonly sqsDataDir?: string;
  readonly log?: (message: string) => void;
}

/** startService/stopService named a stand-in this process did not start. */
export class StandInNotManagedError extends Error {
  public override readonly name = 'StandInNotManagedError';
}

/** A restarted stand-in did not bring back the state it was stopped with. */
export class StandInRestoreError extends Error {
  public override readonly name = 'StandInRestoreError';
}

interface Managed {
  readonly name: StandInName;
  readonly args: readonly string[];
  /** URL that answers once the service is up. */
  readonly probe: string;
  child: ChildProcess | undefined;
  /** ElasticMQ: queue URLs it held when stopped, which a restart must bring back. */
  queues?: string[];
}

const JARS = join(LOCAL_DIR, 'jars');
const STARTUP_TIMEOUT_MS = 60_000;

export async function startStandIns(
  options: StandInOptions = {},
  env: NodeJS.ProcessEnv = process.env,
): Promise<StandIns> {
  const log = options.log ?? (() => undefined);
  const services: Managed[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(services.splice(0).map((s) => stopManaged(s)));
  };
  const managed = (name: StandInName): Managed => {
    const service = services.find((s) => s.name === name);
    if (!service) throw new StandInNotManagedError(`${name} was not started by this process`);
    return service;
  };
  try {
    const configured = (service: string): string | undefined =>
      env[`AWS_ENDPOINT_URL_${service}`] || env.AWS_ENDPOINT_URL || undefined;

    let dynamodb = configured('DYNAMODB');
    if (!dynamodb) {
      const service = dynamoDbLocal(await freePort(), options.dynamodbDataDir);
      dynamodb = service.probe;
      services.push(service);
    } else {
      log(`using configured DynamoDB endpoint ${dynamodb}`);
    }

    let sqs = configured('SQS');
    if (!sqs) {
      const port = await freePort();
      sqs = `http://127.0.0.1:${port}`;
      services.push(elasticMq(port, options.sqsDataDir));
    } else {
      log(`using configured SQS endpoint ${sqs}`);
    }

    for (const service of services) service.child = spawnJava([...javaOptions(env), ...service.args]);
    const endpoints = { dynamodb, sqs };
    await Promise.all(services.map((s) => waitUntilUp(s)));
    for (const { name } of services) log(`${name} is up`);
    return {
      endpoints,
      started: services.map((s) => s.name),
      stop,
      stopService: async (name) => {
        const service = managed(name);
        // ElasticMQ answers before it has restored its stored queues: remember them to wait for them.
        if (name === 'ElasticMQ' && options.sqsDataDir) service.queues = await listQueues(endpoints.sqs);
        await stopManaged(service);
        log(`${name} stopped`);
      },
      startService: async (name) => {
        const service = managed(name);
        if (service.child && service.child.exitCode === null && service.child.signalCode === null) return;
        service.child = spawnJava([...javaOptions(env), ...service.args]);
        await waitUntilUp(service);
        await waitForQueues(endpoints.sqs, service.queues ?? []);
        log(`${name} is up again`);
      },
      env: () => ({
        AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
        AWS_ENDPOINT_URL_SQS: endpoints.sqs,
        AWS_REGION: env.AWS_REGION || 'eu-north-1',
        AWS_ACCESS_KEY_ID: env.AWS_ACCESS_KEY_ID || 'local',
        AWS_SECRET_ACCESS_KEY: env.AWS_SECRET_ACCESS_KEY || 'local',
      }),
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** DynamoDB Local on 127.0.0.1:`port`, in memory or in `dataDir`; its endpoint is its probe. */
function dynamoDbLocal(port: number, dataDir: string | undefined): Managed {
  // One database whatever access key a caller signs with (the runner's processes have their own).
  const args = ['-port', String(port), '-disableTelemetry', '-sharedDb'];
  if (dataDir) {
    mkdirSync(dataDir, { recursive: true });
    args.push('-dbPath', dataDir);
  } else {
    args.push('-inMemory');
  }
  const dir = join(JARS, 'dynamodb-local');
  return {
    name: 'DynamoDB Local',
    args: [
      `-Djava.library.path=${dir}`,
      '-cp',
      `${dir}/*`,
      // DynamoDB Local's own ServerRunner binds every interface; this launcher binds 127.0.0.1.
      LOOPBACK_DYNAMODB,
      ...args,
    ],
    probe: `http://127.0.0.1:${port}`,
    child: undefined,
  };
}

/** ElasticMQ on 127.0.0.1:`port`, its configuration written to .local/run (queues kept in `dataDir`). */
function elasticMq(port: number, dataDir: string | undefined): Managed {
  const runDir = join(LOCAL_DIR, 'run');
  mkdirSync(runDir, { recursive: true });
  const conf = join(runDir, `elasticmq-${port}.conf`);
  writeFileSync(conf, elasticMqConf(port, dataDir));
  return {
    name: 'ElasticMQ',
    args: [`-Dconfig.file=${conf}`, '-cp', `${join(JARS, 'elasticmq')}/*`, 'org.elasticmq.server.Main'],
    probe: `http://127.0.0.1:${port}/?Action=ListQueues`,
    child: undefined,
  };
}

/**
 * JVM options for the stand-ins (LOCAL_JAVA_OPTIONS, space-separated). By default the client compiler only
 * and the serial collector: the stand-ins live minutes to hours on a few cores, where C2's compilations
 * and G1's concurrent threads cost more CPU than they give back (measured: DynamoDB Local 29 -> 18 ms and
 * ElasticMQ 15 -> 6 ms of CPU per sign request in the first minute at 20/s, docs/benchmarks.md).
 */
export const DEFAULT_JAVA_OPTIONS = '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC';

function javaOptions(env: NodeJS.ProcessEnv): string[] {
  return (env.LOCAL_JAVA_OPTIONS ?? DEFAULT_JAVA_OPTIONS).split(/\s+/).filter(Boolean);
}

/**
 * ElasticMQ configuration. With a data directory, queues (with their attributes) and messages are kept in
 * an H2 database (shipped with elasticmq-server) and restored at start; with messages-storage on, ElasticMQ
 * keeps queues there and ignores queues-storage. DB_CLOSE_ON_EXIT=FALSE: otherwise H2's own shutdown hook
 * closes the database under ElasticMQ's writers on SIGTERM and a queue created just before can be lost.
 */
function elasticMqConf(port: number, dataDir: string | undefined): string {
  const lines = [
    'include classpath("application.conf")',
    `node-address { protocol = http, host = 127.0.0.1, port = ${port}, context-path = "" }`,
    `rest-sqs { enabled = true, bind-port = ${port}, bind-hostname = "127.0.0.1", sqs-limits = strict }`,
    'rest-stats { enabled = false }',
  ];
  if (dataDir) {
    mkdirSync(dataDir, { recursive: true });
    // WRITE_DELAY=0: every change is on disk when ElasticMQ answers, so a killed node loses no message.
    const uri = `jdbc:h2:${join(dataDir, 'messages')};DB_CLOSE_ON_EXIT=FALSE;WRITE_DELAY=0`;
    lines.push(`messages-storage { enabled = true, uri = ${JSON.stringify(uri)} }`);
  }
  return [...lines, ''].join('\n');
}

/**
 * Java runs under a small shell watchdog: when this process dies for any reason (even SIGKILL) the pipe
 * on the watchdog's stdin closes and it kills the JVM, so no stand-in outlives its parent.
 */
function spawnJava(args: string[]): ChildProcess {
  // fd 3 keeps the real stdin: a background job's own stdin is /dev/null in a non-interactive shell.
  const script =
    'exec 3<&0; java "$@" >/dev/null 2>&1 & pid=$!; (cat <&3 >/dev/null; kill $pid 2>/dev/null) & wait $pid';
  const child = spawn('sh', ['-c', script, 'stand-in', ...args], { stdio: ['pipe', 'ignore', 'ignore'] });
  child.unref();
  (child.stdin as unknown as { unref?: () => void }).unref?.();
  return child;
}

async function stopManaged(service: Managed): Promise<void> {
  const child = service.child;
  service.child = undefined;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.stdin?.end(); // the watchdog kills the JVM and the shell exits with it
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

async function waitUntilUp(service: Managed): Promise<void> {
  const { name, probe: url } = service;
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const own = service.child;
    if (own && own.exitCode !== null) {
      throw new Error(`${name} exited during start-up (is Java installed? run: npm run bootstrap)`);
    }
    try {
      // Any HTTP answer means the server is listening (DynamoDB answers 400 to a bare GET).
      await fetch(url, { signal: AbortSignal.timeout(1000) });
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 150));
    }
  }
  throw new Error(`${name} did not answer at ${url} within ${STARTUP_TIMEOUT_MS / 1000} s`);
}

/** Queue URLs of an SQS endpoint (ListQueues over the query protocol, as the readiness probe uses). */
async function listQueues(endpoint: string): Promise<string[]> {
  const res = await fetch(`${endpoint}/?Action=ListQueues`, { signal: AbortSignal.timeout(5000) });
  const xml = await res.text();
  return [...xml.matchAll(/<QueueUrl>([^<]+)<\/QueueUrl>/g)].map((m) => m[1]).sort();
}

/** A restarted ElasticMQ restores its stored queues a moment after it starts answering. */
async function waitForQueues(endpoint: string, expected: readonly string[]): Promise<void> {
  if (expected.length === 0) return;
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  let found: string[] = [];
  while (Date.now() < deadline) {
    found = await listQueues(endpoint).catch(() => []);
    if (expected.every((q) => found.includes(q))) return;
    await new Promise((r) => setTimeout(r, 150));
  }
  const missing = expected.filter((q) => !found.includes(q));
  throw new StandInRestoreError(`ElasticMQ restarted without its stored queues: ${missing.join(', ')}`);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
