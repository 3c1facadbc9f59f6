/**
 * The running local API against its OpenAPI document (lambdas/api/openapi.json), fuzzed by a standard
 * tool: schemathesis (PyPI, pinned in scripts/local/validators/contract/schemathesis-requirements.txt,
 * installed by scripts/local/validators/contract/install.sh into .local/validators/contract). It reads
 * the document itself, patterns included, and generates schema-valid and schema-invalid requests for
 * every operation, checked by every schemathesis check (no 5xx, declared status codes, content types,
 * headers and bodies, schema-invalid data refused, credentials enforced, 405 with Allow, ...) but
 * positive_data_acceptance, replaced by this project's check in support/schemathesis_hooks.py: a
 * schema-valid request is refused only for its generated identity assertion (ASSERTION_*) or an unknown
 * request id (404), never for its shape. A pattern schemathesis could not use (it drops it and generates
 * texts the API refuses, such as a sign message with a backspace) fails that check.
 *
 * Bounded: a fixed number of examples per operation (CONTRACT_FUZZ_EXAMPLES) with a fixed seed
 * (CONTRACT_FUZZ_SEED reproduces a run), and the run is killed (and the test fails) after
 * FUZZ_DEADLINE_MS. The stateful phase is not run (it passes, in three more minutes): its one link
 * (create, then read) needs an accepted request, which a generated assertion never gives.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { LOCAL_DIR, ROOT } from '../../paths';
import { runInstaller, ToolError } from '../../verify/tool';
import { startLocalPipeline, type LocalPipeline } from '../pipeline';

const INSTALL_SCRIPT = join(ROOT, 'scripts', 'local', 'validators', 'contract', 'install.sh');
const ST = join(LOCAL_DIR, 'validators', 'contract', 'venv', 'bin', 'st');
const HOOKS_DIR = join(__dirname, 'support');
const OPENAPI = join(ROOT, 'lambdas', 'api', 'openapi.json');
const SEED = Number(process.env.CONTRACT_FUZZ_SEED ?? 20261126);
const EXAMPLES = Number(process.env.CONTRACT_FUZZ_EXAMPLES ?? 100);
/** About a minute alone on a 2-core machine; four leave room for a loaded one. */
const FUZZ_DEADLINE_MS = 240_000;

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
  return new Promise((resolve, reject) => {
    const child = spawn(ST, args, {
      cwd: ROOT,
      env: {
        ...process.env,
        PYTHONPATH: HOOKS_DIR,
        SCHEMATHESIS_HOOKS: 'schemathesis_hooks',
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

test('schemathesis finds no failure in the running API: every schema-valid request is refused only for its credentials', async () => {
  const run = await schemathesis([
    'run',
    OPENAPI,
    '--url',
    pipeline.url.replace(/\/v1$/, ''),
    '--header',
    `x-api-key: ${pipeline.apiKey}`,
    '--checks',
    'all',
    '--exclude-checks',
    'positive_data_acceptance',
    '--phases',
    'examples,coverage,fuzzing',
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
  expect(run.output).not.toMatch(/Unsupported regex patterns|unusable regex/i);
  const generated = Number(/(\d+) generated/.exec(run.output)?.[1] ?? 0);
  expect(generated).toBeGreaterThan(EXAMPLES);
  console.log(`schemathesis: ${generated} test cases in ${Math.round(run.ms / 1000)} s (seed ${SEED})`);
});
