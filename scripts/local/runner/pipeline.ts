/**
 * The whole pipeline on one machine, hosting the unchanged handlers: SoftHSM token (made by the
 * bootstrap), DynamoDB Local + ElasticMQ (or configured endpoints), tables and queues from the shared
 * definitions, an HTTP server playing API Gateway, a Lambda Invoke endpoint for the CA function, consumer
 * processes playing the SQS event source mapping for the signer, and timers playing the keygen,
 * checkpointer and reconcile schedules.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { asFunction, dynamoDbClient, sqsClient } from '@pipeline/adapters/aws';
import {
  loadApiFunctionConfig,
  loadAuditCheckpointFunctionConfig,
  loadCaConfig,
  loadConfig,
  loadCscFunctionConfig,
  loadDssExtFunctionConfig,
  loadKeygenFunctionConfig,
  loadPipelineConfig,
  loadQueueFunctionConfig,
} from '@pipeline/config';
import { API_STAGE, QUEUES, SCHEDULES, TABLES, tableName } from '@pipeline/resources';
import {
  checkpointRound,
  createApiHandler,
  createCscHandler,
  createDssExtHandler,
  createKeygenHandler,
  createReconcileHandler,
  wireApi,
  wireAuditCheckpoint,
  wireCsc,
  wireDssExt,
  wireKeygen,
  wireReconcile,
  type ApiHandlerDeps,
} from '../../../lambdas/handlers';
import { ensureQueue, ensureTables } from '../resources';
import { freePort, setUpDssExt, type LocalDssExt } from './dss-ext';
import { localAnchorDir } from '../audit-anchors';
import { IDP_CLIENT_KEYS_DIR, localClientKey, localClientKeysEnv } from '../client-keys';
import { CLIENT_IDS } from '../idp/clients';
import { startIdpProcess } from '../idp/process';
import { localIdentityEnv } from '../idp/trust';
import { ROOT } from '../paths';
import { startStandIns, type StandIns } from '../stand-ins';
import { localHsmEnv } from '../token';
import { apiKeyPrincipalsEnv, loadApiClients, withCredentials, type SigningApiClient } from './api-keys';
import { LOCAL_IDP_CALLBACK_PATH, PKI_PREFIX, lambdaContext, startGateway, type ApiHandler } from './gateway';
import { startLambdaInvokeServer } from './lambda-invoke-server';
import { callerEnv } from './invoke-auth';
import {
  INVOKE_CALLERS_ENV,
  createCaSideFunctions,
  deferredCaSideFunctions,
  invokableFunctions,
  newInvokeCallers,
} from './pki';
import { installHsmFaults } from '../faults/install';
import { RequestEndingSignals, type RequestEndings } from '@pipeline/api';

export interface LocalPipelineOptions {
  /** Environment overrides applied before anything is configured (e.g. POOL_TARGETS, PORT). */
  readonly env?: Readonly<Record<string, string>>;
  /** Run the keygen schedule (with an initial fill). Default true. */
  readonly keygen?: boolean;
  /**
   * Keep DynamoDB tables (.local/dynamodb) and ElasticMQ queues with their messages (.local/elasticmq)
   * across restarts, so a restarted node finds its backlog. Default false (in memory).
   */
  readonly persist?: boolean;
  /**
   * Prefix for table and queue names, so several pipelines (tests) can share one set of stand-ins.
   * Table names already set in the environment are kept.
   */
  readonly resourcePrefix?: string;
  readonly log?: (line: string) => void;
  /** Where the gateway's access lines (one per request) go; default `log`. */
  readonly accessLog?: (line: string) => void;
  /** Where the schedules' run summaries go; default `log`. */
  readonly runLog?: (line: string) => void;
  /**
   * Puts something in front of a service endpoint (the benchmarks' counting proxy): gets the stand-in's
   * URL, returns the URL every handler and process of this pipeline will use instead.
   */
  readonly wrapEndpoint?: (service: 'dynamodb' | 'sqs' | 'lambda', url: string) => Promise<string>;
  /**
   * Whether health answers `ok` from the start (default true); false: `starting` (503) until markReady(),
   * as `npm start` does until its banner's conditions hold (the initial fill, the warm-up).
   */
  readonly startsReady?: boolean;
  /**
   * More identity providers for the DSS-Ext door's federation (LOCAL_DSSEXT=1): given the door's SP
   * metadata, their md:EntityDescriptors (a test's SimpleSAMLphp). The local SAML IdP is always in it.
   */
  readonly samlIdentityProviders?: (spMetadataXml: string) => Promise<readonly string[]>;
  /** Told when a scheduled function (keygen, crl, audit-checkpoint, reconcile) has run: the benchmarks' markers. */
  readonly onScheduledRun?: (run: ScheduledRun) => void;
}

export interface ScheduledRun {
  readonly name: string;
  /** Epoch milliseconds. */
  readonly startedAt: number;
  readonly ms: number;
  readonly result: unknown;
}

/** A child process of the runner (consumer or CA host). */
export interface ChildHandle {
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
}

export interface ConsumerProcess extends ChildHandle {
  /** Whether it has logged in to the HSM and started polling (it prints `consumer ready`). */
  isReady(): boolean;
}

export interface LocalPipeline {
  readonly url: string;
  /** The API clients, each with the SigV4 credentials it signs with (made at this start) and its principal. */
  readonly clients: readonly SigningApiClient[];
  readonly apiKey: string;
  /** The CSC API (when citizens log in at an OpenID Provider) and its local client, if the runner registered it. */
  readonly csc?: LocalCsc;
  /** The DSS-Ext door, its SAML IdP and its registered test e-service (LOCAL_DSSEXT=1). */
  readonly dssExt?: LocalDssExt;
  readonly standIns: StandIns;
  readonly queueUrl: string;
  readonly deadLetterQueueUrl: string;
  /**
   * The environment the handlers run with (endpoints, table names, queue URLs, HSM settings): the
   * functions of this process are configured from it, the child processes started with it.
   */
  readonly env: Readonly<Record<string, string>>;
  readonly consumers: ConsumerProcess[];
  /** Starts one more consumer process (e.g. after a test killed one), with environment overrides. */
  startConsumer(overrides?: Readonly<Record<string, string>>): ConsumerProcess;
  /** Runs the keygen function once now (the schedule also runs it) and waits for it. */
  runKeygen(): Promise<unknown>;
  /** From now on health answers `ok` (see LocalPipelineOptions.startsReady). */
  markReady(): void;
  stop(): Promise<void>;
}

/**
 * The API's dependencies with health's readiness taken from the runner, and the consumers' word of ended
 * requests for the clients' waits.
 */
function withRunner(deps: ApiHandlerDeps, ready: () => boolean, endings: RequestEndings): ApiHandlerDeps {
  return { ...deps, api: { ...deps.api, ready, endings } };
}

/**
 * Child processes run TypeScript through tsx's loader inside one node process (not the `tsx` launcher,
 * which forks a second process): a SIGKILL sent to the child then kills the handler's process itself.
 */
const runTs = (file: string, env: NodeJS.ProcessEnv, ipc = false): ChildProcess =>
  spawn(process.execPath, [...profileArgs(env), '--import', 'tsx', file], {
    env,
    cwd: ROOT,
    stdio: ipc ? ['pipe', 'pipe', 'pipe', 'ipc'] : ['pipe', 'pipe', 'pipe'],
  });

/** LOCAL_CPU_PROFILE_DIR: every child process writes a CPU profile there when it exits (benchmarks). */
function profileArgs(env: NodeJS.ProcessEnv): string[] {
  const dir = env.LOCAL_CPU_PROFILE_DIR;
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-interval=1000'] : [];
}

/** Local-only defaults: EMF metric lines would drown the request log (LOCAL_METRICS=1 shows them). */
const LOCAL_DEFAULTS: Record<string, string> = {
  POWERTOOLS_METRICS_DISABLED: process.env.LOCAL_METRICS === '1' ? 'false' : 'true',
  // Fixed pool targets locally (POOL_TARGETS): with no demand history the forecast would plan for the
  // cold-start profile, RSA-4096 included. KEYGEN_POLICY=forecast runs the real planner.
  KEYGEN_POLICY: 'targets',
  // Local queues redeliver within a minute (10 s visibility x 5 receives); five minutes also outlasts the
  // backlog of a saturating benchmark, which requeues would only add to.
  RECONCILE_STALE_AFTER_SECONDS: '300',
};

type Log = (line: string) => void;
type Cleanups = Array<() => Promise<void>>;
/** The pipeline's environment record, filled in as its parts start (never process.env). */
type Env = Record<string, string>;
type PipelineConfig = ReturnType<typeof loadPipelineConfig>;
type CaSideFunctions = ReturnType<typeof createCaSideFunctions>;
/** Points an endpoint variable at a wrapper of the service (LocalPipelineOptions.wrapEndpoint), if any. */
type WrapEndpoint = (service: 'dynamodb' | 'sqs' | 'lambda', variable: string) => Promise<void>;

export async function startLocalPipeline(options: LocalPipelineOptions = {}): Promise<LocalPipeline> {
  const log = options.log ?? ((line: string) => console.log(line));
  const env: Env = { ...localHsmEnv(), ...LOCAL_DEFAULTS, ...definedEntries(process.env), ...options.env };
  // Read from this process's environment, not from a function's configuration: SoftHSM its configuration
  // file's path (at the PKCS#11 module's initialisation), Powertools whether to print metric lines, every
  // logger its level, every SDK client whether to record its calls (AWS_CALL_RECORD_FILE).
  for (const name of ['SOFTHSM2_CONF', 'POWERTOOLS_METRICS_DISABLED', 'LOG_LEVEL', 'AWS_CALL_RECORD_FILE']) {
    if (env[name] !== undefined) process.env[name] = env[name];
  }
  // The PIN never lives in configuration: an `env:` PIN source is read from the process's environment
  // when the HSM logs in, so the functions this process hosts find a PIN given in options.env there too.
  for (const name of pinVariables(env)) if (env[name] !== undefined) process.env[name] = env[name];
  const standIns = await startStandIns(
    {
      log,
      dynamodbDataDir: options.persist ? join(persistDir(env), 'dynamodb') : undefined,
      sqsDataDir: options.persist ? join(persistDir(env), 'elasticmq') : undefined,
    },
    env,
  );
  const cleanups: Cleanups = [() => standIns.stop()];
  const stop = async (): Promise<void> => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  };
  let ready = options.startsReady ?? true;
  try {
    Object.assign(env, standIns.env());
    // The AWS SDK's default credential chain reads this process's credentials from its environment: the
    // stand-ins' until the CA side makes the runner's own (startCaSide).
    for (const name of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY']) process.env[name] ||= env[name];
    const wrap: WrapEndpoint = async (service, variable) => {
      const url = env[variable];
      if (options.wrapEndpoint && url) env[variable] = await options.wrapEndpoint(service, url);
    };
    await wrap('dynamodb', 'AWS_ENDPOINT_URL_DYNAMODB');
    await wrap('sqs', 'AWS_ENDPOINT_URL_SQS');
    await setUpIdentity(env, log, cleanups);
    // The DSS-Ext door's URLs are in the CA's and the API's settings: the gateway's port is chosen first.
    let dssExt: LocalDssExt | undefined;
    if (env.LOCAL_DSSEXT === '1') {
      if (Number(env.PORT ?? 8080) === 0) env.PORT = String(await freePort());
      dssExt = await setUpDssExt(env, Number(env.PORT ?? 8080), cleanups, log, options.samlIdentityProviders);
    }
    const prefix = options.resourcePrefix ?? '';
    for (const table of Object.values(TABLES)) env[table.envVar] ||= `${prefix}${table.localName}`;
    const pipeline = loadPipelineConfig(env);
    const queue = await createResources(env, prefix, pipeline);

    // CRLs and CA certificates go where the gateway serves them (per resource prefix: pipelines sharing the
    // stand-ins publish apart); the certificates point at PKI_BASE_URL, the gateway's /pki by default.
    env.PKI_PUBLISH_TARGET ||= `file:${join(ROOT, '.local', 'pki', prefix || 'default')}`;
    if (pipeline.local.port !== 0) {
      env.PKI_BASE_URL ||= `http://127.0.0.1:${pipeline.local.port}${PKI_PREFIX}`;
    }

    const { caSide, signerEnv } = await startCaSide(env, pipeline, log, cleanups, wrap);
    // The consumers say which requests they ended; the API's waits wake on it (see RequestEndingSignals).
    const endings = new RequestEndingSignals();
    // The CSC API, once the gateway's address (its public base URL) is known.
    let csc: ApiHandler | undefined;
    let dssExtDoor: ApiHandler | undefined;
    const { gateway, clients } = await startApiGateway(
      env,
      pipeline,
      caSide,
      options.accessLog ?? log,
      () => ready,
      endings,
      (event, context) => (csc ?? cscUnavailable)(event, context),
      dssExt ? (event, context) => (dssExtDoor ?? cscUnavailable)(event, context) : undefined,
    );
    cleanups.push(() => closeServer(gateway));
    const port = (gateway.address() as AddressInfo).port;
    const url = `http://127.0.0.1:${port}/${API_STAGE}`;
    const cscClient = env.IDENTITY_TRUSTED_ISSUERS ? localCscEnv(env, port) : undefined;
    if (cscClient) csc = createCscHandler(await wireCsc(loadCscFunctionConfig(env)));
    if (dssExt) dssExtDoor = createDssExtHandler(await wireDssExt(loadDssExtFunctionConfig(env)));

    const { consumers, startConsumer } = startConsumers(
      { ...env, ...signerEnv },
      pipeline,
      endings,
      log,
      cleanups,
    );
    const runKeygen = startSchedules(env, pipeline, caSide, options, options.runLog ?? log, log, cleanups);
    publishEnv(env);
    const apiKey = clients[0].apiKey;
    return {
      url,
      ...(cscClient ? { csc: cscClient } : {}),
      ...(dssExt ? { dssExt } : {}),
      clients,
      apiKey,
      standIns,
      queueUrl: queue.url,
      deadLetterQueueUrl: queue.deadLetterUrl,
      env,
      consumers,
      startConsumer,
      runKeygen,
      markReady: () => {
        ready = true;
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * The local OpenID Provider, unless identity assertions are already trusted from elsewhere (the Jest
 * set-up's IdP, or a configured one) or this deployment takes the signer from its clients; in a
 * deployment whose e-services vouch for their signers, every local client's key is registered.
 */
async function setUpIdentity(env: Env, log: Log, cleanups: Cleanups): Promise<void> {
  if (!env.IDENTITY_TRUSTED_ISSUERS && env.IDENTITY_MODE !== 'trusted-client') {
    const idp = await startIdpProcess({
      port: Number(env.LOCAL_IDP_PORT ?? 0),
      idTokenTtlSeconds: env.LOCAL_IDP_ID_TOKEN_TTL_SECONDS
        ? Number(env.LOCAL_IDP_ID_TOKEN_TTL_SECONDS)
        : undefined,
      log: (line) => log(`[idp] ${line}`),
    });
    cleanups.push(() => idp.stop());
    Object.assign(env, localIdentityEnv(idp));
  }
  if (env.IDENTITY_MODE === 'trusted-client' && !env.IDENTITY_CLIENT_KEYS) {
    Object.assign(env, localClientKeysEnv(loadApiClients(env).map((c) => c.clientId)));
  }
}

/**
 * The tables, the audit anchor directory and the sign-request queue with its dead-letter queue, made if
 * missing; their names and URLs go into the environment record. Returns the queue.
 */
async function createResources(
  env: Env,
  prefix: string,
  pipeline: PipelineConfig,
): Promise<Awaited<ReturnType<typeof ensureQueue>>> {
  const aws = loadConfig(env).aws;
  const dynamodb = dynamoDbClient(aws);
  await ensureTables(dynamodb, Object.values(TABLES), env);
  // Audit checkpoints are anchored outside the table: a directory of this table's own.
  env.AUDIT_ANCHOR_TARGET ||= `file:${await localAnchorDir(dynamodb, tableName(TABLES.audit, env))}`;
  dynamodb.destroy();
  const sqs = sqsClient(aws);
  const queue = await ensureQueue(sqs, QUEUES.signRequests, {
    prefix,
    visibilityTimeoutSeconds: pipeline.local.visibilityTimeoutSeconds,
  });
  const queueArn = (
    await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queue.url, AttributeNames: ['QueueArn'] }))
  ).Attributes!.QueueArn!;
  env[QUEUES.signRequests.envVar] = queue.url;
  env[QUEUES.signRequests.deadLetter.envVar] = queue.deadLetterUrl;
  env.SIGN_QUEUE_ARN = queueArn;
  return queue;
}

/**
 * The CA functions behind a Lambda Invoke endpoint, as the signer and the API reach them on AWS: in a
 * child process of its own with LOCAL_CA_PROCESS=1, in this process by default. Each caller signs with
 * credentials made now: the consumers may only ask for certificates, this process (API, schedules,
 * revocation) and the operator tools only revoke and publish. Returns this process's CA-side functions
 * (each sets up on its first invocation, once the endpoints are known; the TSA and the OCSP responder go
 * behind the gateway's public PKI endpoint) and the consumers' caller credentials.
 */
async function startCaSide(
  env: Env,
  pipeline: PipelineConfig,
  log: Log,
  cleanups: Cleanups,
  wrap: WrapEndpoint,
): Promise<{ caSide: CaSideFunctions; signerEnv: Record<string, string> }> {
  const callers = newInvokeCallers(env);
  Object.assign(env, callerEnv(callers.runner));
  // The AWS SDK's default credential chain reads this process's credentials from its environment.
  Object.assign(process.env, callerEnv(callers.runner));
  const signerEnv = callerEnv(callers.signer);
  // Wired once the Lambda endpoint is known (the revocation function invokes the CRL publication).
  const caSide = deferredCaSideFunctions();
  if (pipeline.local.caProcess) {
    const caHost = await spawnCaHost(
      { ...env, [INVOKE_CALLERS_ENV]: JSON.stringify(Object.values(callers)) },
      log,
    );
    cleanups.push(() => stopConsumer(caHost));
    env.AWS_ENDPOINT_URL_LAMBDA = `http://127.0.0.1:${caHost.port}`;
  } else {
    const invokeServer = await startLambdaInvokeServer(invokableFunctions(caSide, env), {
      callers: Object.values(callers),
      onAsyncError: (name, err) => log(`${name} (asynchronous) failed: ${err.name}: ${err.message}`),
      onRefused: (name, type) => log(`invocation of ${name} refused: ${type}`),
    });
    cleanups.push(() => closeServer(invokeServer));
    env.AWS_ENDPOINT_URL_LAMBDA = `http://127.0.0.1:${(invokeServer.address() as AddressInfo).port}`;
  }
  await wrap('lambda', 'AWS_ENDPOINT_URL_LAMBDA');
  caSide.wire(createCaSideFunctions(env));
  return { caSide, signerEnv };
}

/**
 * The HTTP server playing API Gateway in front of the API function, and the public PKI endpoint. Each
 * client signs with credentials of its own (IAM on AWS), and the API function knows whose key each is
 * (API_KEY_PRINCIPALS, as the CDK app sets it): a key presented by another caller is refused.
 */
async function startApiGateway(
  env: Env,
  pipeline: PipelineConfig,
  caSide: CaSideFunctions,
  accessLog: Log,
  ready: () => boolean,
  endings: RequestEndings,
  csc: ApiHandler,
  dssExt: ApiHandler | undefined,
): Promise<{ gateway: Server; clients: SigningApiClient[] }> {
  const ca = loadCaConfig(env);
  const clients = withCredentials(loadApiClients(env));
  Object.assign(env, apiKeyPrincipalsEnv(clients));
  const gateway = await startGateway(
    {
      handler: createApiHandler(withRunner(wireApi(loadApiFunctionConfig(env)), ready, endings)),
      clients,
      requireSigV4: pipeline.local.requireSigV4,
      limits: pipeline.local.limits,
      log: env.LOCAL_ACCESS_LOG === '0' ? undefined : accessLog,
      pki: {
        dir: ca.publishTarget.kind === 'file' ? ca.publishTarget.dir : join(ROOT, '.local', 'pki'),
        ocsp: caSide.ocsp,
        tsa: caSide.tsa,
      },
      csc,
      ...(dssExt ? { dssExt } : {}),
      cscLimits: pipeline.local.cscLimits,
    },
    pipeline.local.port,
  );
  return { gateway, clients };
}

/** The signer's consumer processes (LOCAL_CONSUMERS of them now), and how to start one more. */
function startConsumers(
  env: Record<string, string>,
  pipeline: PipelineConfig,
  endings: RequestEndingSignals,
  log: Log,
  cleanups: Cleanups,
): Pick<LocalPipeline, 'consumers' | 'startConsumer'> {
  const consumers: ConsumerProcess[] = [];
  // A consumer process plays `pollerConcurrency` execution environments, each of which has its own
  // SIGNER_CONCURRENCY on AWS: the process's limit is theirs together, unless set explicitly.
  const concurrency: Record<string, string> = env.SIGNER_CONCURRENCY
    ? {}
    : { SIGNER_CONCURRENCY: String(pipeline.signerConcurrency * pipeline.local.pollerConcurrency) };
  const startConsumer = (overrides: Readonly<Record<string, string>> = {}): ConsumerProcess => {
    const consumer = spawnConsumer({ ...env, ...concurrency, ...overrides }, log, consumers.length, (id) =>
      endings.announce(id),
    );
    consumers.push(consumer);
    return consumer;
  };
  for (let i = 0; i < pipeline.local.consumers; i++) startConsumer();
  cleanups.push(async () => {
    await Promise.all(consumers.map((c) => stopConsumer(c)));
  });
  return { consumers, startConsumer };
}

/** The keygen, CRL, audit checkpoint and reconcile schedules; returns "run keygen once now". */
function startSchedules(
  env: Env,
  pipeline: PipelineConfig,
  caSide: CaSideFunctions,
  options: LocalPipelineOptions,
  runLog: Log,
  log: Log,
  cleanups: Cleanups,
): () => Promise<unknown> {
  // The runner's own HSM (keygen) gets the injected faults too, when the environment asks for them.
  installHsmFaults(env);
  const keygen = createKeygenHandler(wireKeygen(loadKeygenFunctionConfig(env)));
  const runKeygen = schedule(
    'keygen',
    () => keygen({}, lambdaContext('keygen', pipeline.local.keygenIntervalSeconds * 1000 + 20_000)),
    pipeline.local.keygenIntervalSeconds,
    options.keygen !== false,
    { run: runLog, failure: log },
    cleanups,
    { onRun: options.onScheduledRun },
  );
  schedule(
    'crl',
    () => caSide.crl({}, lambdaContext('crl', SCHEDULES.crl.timeoutSeconds * 1000)),
    pipeline.local.crlIntervalSeconds,
    true,
    { run: runLog, failure: log },
    cleanups,
    {
      logQuiet: true,
      onRun: options.onScheduledRun,
    },
  );
  // The checkpointer's rounds, at the interval its deployed loop keeps.
  const checkpointer = wireAuditCheckpoint(loadAuditCheckpointFunctionConfig(env));
  schedule(
    'audit-checkpoint',
    // Not through a handler (a round of the deployed loop): its calls recorded as the function's.
    () => asFunction('audit-checkpoint', () => checkpointRound(checkpointer)).then(() => undefined),
    checkpointer.intervalMs / 1000,
    true,
    { run: runLog, failure: log },
    cleanups,
    { logQuiet: true, onRun: options.onScheduledRun },
  );
  const reconcile = createReconcileHandler(wireReconcile(loadQueueFunctionConfig(env)));
  schedule(
    'reconcile',
    () => reconcile({}, lambdaContext('reconcile', SCHEDULES.reconcile.timeoutSeconds * 1000)),
    pipeline.local.reconcileIntervalSeconds,
    true,
    { run: runLog, failure: log },
    cleanups,
    { runAtStart: false, logQuiet: true, onRun: options.onScheduledRun },
  );
  return runKeygen;
}

export interface LocalCsc {
  /** The CSC API's base URL (`.../csc/v2`). */
  readonly url: string;
  /** The client the runner registered when CSC_CLIENTS was unset (its secret made at this start). */
  readonly client?: { readonly clientId: string; readonly secret: string; readonly redirectUri: string };
}

/** Where the local CSC clients are sent back to (the scripted user agent stops there). */
export const LOCAL_CSC_REDIRECT_URI = 'http://127.0.0.1/csc-client/callback';

/**
 * The CSC API's local settings: its base URL on the gateway, the signing service's key registered at
 * the local IdP (which signs the signRequest), and unless CSC_CLIENTS is set, one client `csc-local`
 * whose secret is made now.
 */
function localCscEnv(env: Env, port: number): LocalCsc {
  const base = `http://127.0.0.1:${port}/csc/v2`;
  env.CSC_BASE_URL ||= base;
  // The redirect URI the local IdP has registered for the signing service (any loopback port).
  env.CSC_IDP_REDIRECT_URI ||= `http://127.0.0.1:${port}${LOCAL_IDP_CALLBACK_PATH}`;
  const key = localClientKey(CLIENT_IDS.signingService, IDP_CLIENT_KEYS_DIR);
  env.CSC_IDP_CLIENT_KEY ||= `file:${key.jwksFile.replace(/\.jwks\.json$/, '.private.jwk.json')}`;
  if (env.CSC_CLIENTS) return { url: env.CSC_BASE_URL };
  const client = {
    clientId: 'csc-local',
    secret: randomBytes(32).toString('base64url'),
    redirectUri: LOCAL_CSC_REDIRECT_URI,
  };
  env.CSC_CLIENTS = JSON.stringify([
    {
      clientId: client.clientId,
      name: 'Local CSC client',
      secretHash: createHash('sha256').update(client.secret).digest('hex'),
      redirectUris: [client.redirectUri],
    },
  ]);
  return { url: env.CSC_BASE_URL, client };
}

const cscUnavailable: ApiHandler = () =>
  Promise.resolve({
    statusCode: 503,
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      error: 'temporarily_unavailable',
      error_description: 'no CSC API here: no OpenID Provider',
    }),
  });

/** Where LOCAL_PERSIST keeps the stand-ins' data: LOCAL_PERSIST_DIR, by default .local. */
function persistDir(env: Env): string {
  return env.LOCAL_PERSIST_DIR || join(ROOT, '.local');
}

/**
 * A scheduled function, as EventBridge plus reserved concurrency 1 run it: every `intervalSeconds` (and
 * once at start unless told otherwise); a tick that finds the previous run still going waits for it.
 * Returns "run once now"; the timer stops with the pipeline.
 */
function schedule(
  name: string,
  run: () => Promise<unknown>,
  intervalSeconds: number,
  enabled: boolean,
  log: { readonly run: Log; readonly failure: Log },
  cleanups: Array<() => Promise<void>>,
  options: { runAtStart?: boolean; logQuiet?: boolean; onRun?: (run: ScheduledRun) => void } = {},
): () => Promise<unknown> {
  let running: Promise<unknown> | undefined;
  const runOnce = (): Promise<unknown> => {
    const startedAt = Date.now();
    running ??= run()
      .then(
        (result) => {
          options.onRun?.({ name, startedAt, ms: Date.now() - startedAt, result });
          if (!options.logQuiet || hasActivity(result)) log.run(`${name}: ${JSON.stringify(result)}`);
          return result;
        },
        (err: Error) => log.failure(`${name} failed: ${err.name}: ${err.message}`),
      )
      .finally(() => (running = undefined));
    return running;
  };
  if (enabled) {
    if (options.runAtStart !== false) void runOnce();
    const timer = setInterval(() => void runOnce(), intervalSeconds * 1000);
    cleanups.push(async () => {
      clearInterval(timer);
      await running;
    });
  }
  return runOnce;
}

/** A run summary with any non-zero count (quiet runs of frequent schedules are not logged). */
function hasActivity(result: unknown): boolean {
  return Object.values((result ?? {}) as Record<string, unknown>).some((v) => typeof v === 'number' && v > 0);
}

function definedEntries(env: NodeJS.ProcessEnv): Env {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

/**
 * The pipeline's environment, copied into this process's once it runs: for the tools and tests in the
 * same process that read its settings from there (table names, endpoints, the CSC settings). The
 * functions never read it: each is wired from its configuration, parsed from the record.
 */
function publishEnv(env: Env): void {
  Object.assign(process.env, env);
}

function spawnConsumer(
  env: Record<string, string>,
  log: (line: string) => void,
  index: number,
  onEnded: (requestId: string) => void,
): ConsumerProcess {
  const child = runTs(join(__dirname, 'consumer.ts'), env, true);
  child.on('message', (message: { ended?: unknown }) => {
    if (typeof message?.ended === 'string') onEnded(message.ended);
  });
  let ready = false;
  for (const stream of [child.stdout!, child.stderr!]) {
    createInterface({ input: stream }).on('line', (line) => {
      if (line === 'consumer ready') ready = true;
      log(`[signer-${index}] ${line}`);
    });
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, exited, isReady: () => ready && child.exitCode === null && child.signalCode === null };
}

/** Starts the CA host process and waits until it listens. */
function spawnCaHost(
  env: Record<string, string>,
  log: (line: string) => void,
): Promise<ChildHandle & { port: number }> {
  const child = runTs(join(__dirname, 'ca-host.ts'), env);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  createInterface({ input: child.stderr! }).on('line', (line) => log(`[ca] ${line}`));
  return new Promise((resolve, reject) => {
    let port: number | undefined;
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const listening = /^listening (\d+)$/.exec(line);
      if (listening && port === undefined) {
        port = Number(listening[1]);
        resolve({ child, exited, port });
      } else log(`[ca] ${line}`);
    });
    void exited.then(() => reject(new Error('the CA host process exited before it listened')));
  });
}

async function stopConsumer(consumer: ChildHandle): Promise<void> {
  const { child } = consumer;
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await consumer.exited;
  clearTimeout(timer);
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** The variables `env:` PIN sources name (HSM_PIN_SOURCE and the CA side's, default `env:HSM_PIN`). */
function pinVariables(env: Env): string[] {
  const specs = [
    env.HSM_PIN_SOURCE || 'env:HSM_PIN',
    env.CA_HSM_PIN_SOURCE,
    env.OCSP_HSM_PIN_SOURCE,
    env.TSA_HSM_PIN_SOURCE,
  ];
  return specs.flatMap((spec) => (spec?.startsWith('env:') ? [spec.slice('env:'.length)] : []));
}
