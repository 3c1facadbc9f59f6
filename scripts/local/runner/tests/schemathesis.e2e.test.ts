/**
 * The running local API against its OpenAPI document (lambdas/api/openapi.json), fuzzed by a standard
 * tool: schemathesis (PyPI, pinned in scripts/local/validators/contract/schemathesis-requirements.txt,
 * installed by scripts/local/validators/contract/install.sh into .local/validators/contract). It reads
 * the document itself, patterns included, and generates schema-valid and schema-invalid requests for
 * every operation, in every phase (examples, coverage, fuzzing, and the stateful one, which follows the
 * document's links), checked by every schemathesis check (no 5xx, declared status codes, content types,
 * headers and bodies, schema-invalid data refused, schema-valid data accepted, credentials enforced, 405
 * with Allow, ...), against a gateway that requires the API key and SigV4 together as the document
 * does (the hooks sign every request schemathesis sends with credentials; one it sends without them is
 * refused 401). What openapi.json says a schema-valid body may still get (400 for a generated
 * identity assertion, 413 over the body limit) support/schemathesis.toml lets positive_data_acceptance
 * accept, and the project's check in support/schemathesis_hooks.py narrows to exactly the codes and
 * the size the document names. A pattern schemathesis could not use (it drops it and generates texts
 * the API refuses, such as a sign message with a backspace) fails that check.
 *
 * Bounded: a fixed number of examples per operation (CONTRACT_FUZZ_EXAMPLES) with a fixed seed
 * (CONTRACT_FUZZ_SEED reproduces a run), and the run is killed (and the test fails) after
 * FUZZ_DEADLINE_MS.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { MAX_BODY_BYTES } from '@pipeline/resources';
import { LOCAL_DIR, ROOT } from '../../paths';
import { runInstaller, ToolError } from '../../verify/tool';
import { startLocalPipeline, type LocalPipeline } from '../pipeline';

const INSTALL_SCRIPT = join(ROOT, 'scripts', 'local', 'validators', 'contract', 'install.sh');
const ST = join(LOCAL_DIR, 'validators', 'contract', 'venv', 'bin', 'st');
const HOOKS_DIR = join(__dirname, 'support');
const CONFIG = join(HOOKS_DIR, 'schemathesis.toml');
const OPENAPI = join(ROOT, 'lambdas', 'api', 'openapi.json');
const SEED = Number(process.env.CONTRACT_FUZZ_SEED ?? 20261126);
const EXAMPLES = Number(process.env.CONTRACT_FUZZ_EXAMPLES ?? 100);
/** About four minutes alone on a 2-core machine, the stateful phase three of them (nine at a load of 11). */
const FUZZ_DEADLINE_MS = 900_000;

jest.setTimeout(FUZZ_DEADLINE_MS + 900_000);

class SchemathesisInstallError extends ToolError {}

let pipeline: LocalPipeline;

beforeAll(async () => {
  // Quick when in place; on a fresh machine pip installs the pinned set (a minute).
  runInstaller(INSTALL_SCRIPT, 'schemathesis', SchemathesisInstallError);
  pipeline = await startLocalPipeline({
    resourcePrefix: `fuzz-${randomBytes(3).toString('hex')}-`,
    log: () => undefined,
    env: {
      PORT: '0',
      POOL_TARGETS: 'EC-P256=2',
      LOCAL_KEYGEN_INTERVAL_SECONDS: '3600',
      LOG_LEVEL: 'ERROR',
      // As on AWS and as the document says: the API key and SigV4 together (the hooks sign each request).
      LOCAL_API_REQUIRE_SIGV4: '1',
    },
  });
});

afterAll(async () => {
  await pipeline?.stop();
});

interface Run {
  readonly code: number | null;
  readonly output: string;
  readonly killed: boolean;
  readonly ms: number;
}

/** Runs `st` asynchronously: the gateway answering it lives in this process's event loop. */
function schemathesis(args: readonly string[]): Promise<Run> {
  const started = Date.now();
  // The SigV4 credentials of the API key's own client: the gateway refuses a key not the signer's.
  const signer = pipeline.clients.find((c) => c.apiKey === pipeline.apiKey);
  if (!signer) throw new Error('the local pipeline has no client for its API key');
  return new Promise((resolve, reject) => {
    const child = spawn(ST, args, {
      cwd: ROOT,
      env: {
        ...process.env,
        PYTHONPATH: HOOKS_DIR,
        SCHEMATHESIS_HOOKS: 'schemathesis_hooks',
        CONTRACT_MAX_BODY_BYTES: String(MAX_BODY_BYTES),
        CONTRACT_SIGV4_ACCESS_KEY_ID: signer.accessKeyId,
        CONTRACT_SIGV4_SECRET_ACCESS_KEY: signer.secretAccessKey,
        NO_COLOR: '1',
        COLUMNS: '120',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (output += d.toString('utf8')));
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, FUZZ_DEADLINE_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output, killed, ms: Date.now() - started });
    });
  });
}

test('schemathesis finds no failure in the running API, all checks and phases: a schema-valid request is refused only as the document describes', async () => {
  const run = await schemathesis([
    '--config-file',
    CONFIG,
    'run',
    OPENAPI,
    '--url',
    pipeline.url.replace(/\/v1$/, ''),
    '--header',
    `x-api-key: ${pipeline.apiKey}`,
    '--checks',
    'all',
    '--phases',
    'examples,coverage,fuzzing,stateful',
    '--max-examples',
    String(EXAMPLES),
    '--seed',
    String(SEED),
    '--workers',
    '1',
    '--request-timeout',
    '30',
    '--no-color',
  ]);
  const summary = { exitCode: run.code, killedAtDeadline: run.killed };
  if (run.code !== 0) console.log(run.output.slice(-8000));
  expect(summary).toEqual({ exitCode: 0, killedAtDeadline: false });
  // It tested every operation with the document's patterns (none it could not use).
  expect(run.output).toMatch(/Tested: 4\b/);
  expect(run.output).toMatch(/✅ Stateful/);
  expect(run.output).not.toMatch(/Unsupported regex patterns|unusable regex/i);
  const generated = Number(/(\d+) generated/.exec(run.output)?.[1] ?? 0);
  expect(generated).toBeGreaterThan(EXAMPLES);
  console.log(`schemathesis: ${generated} test cases in ${Math.round(run.ms / 1000)} s (seed ${SEED})`);
});
