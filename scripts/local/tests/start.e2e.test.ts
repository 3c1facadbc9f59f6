/**
 * `npm start`'s console, as a newcomer sees it: start.ts in a process of its own (on the Jest set-up's
 * stand-ins, tables and queues of its own), a signature through it, then three calls. The console has the
 * banner and one access line per call and no JSON; the log file named in the banner has the functions'
 * JSON lines.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { call, signSample } from '../client';
import { ROOT } from '../paths';

jest.setTimeout(240_000);

let dir: string;
let child: ChildProcess;
const lines: string[] = [];
let banner: { url: string; apiKey: string; logFile: string };

const isJson = (line: string): boolean => {
  try {
    JSON.parse(line.replace(/^\[[\w-]+\] /, ''));
    return /^(\[[\w-]+\] )?[{[]/.test(line);
  } catch {
    return false;
  }
};

const isAccess = (line: string): boolean => /^[A-Z]+ \/\S* \d{3} \d+\.\dms client=/.test(line);

/**
 * The console lines that arrived since `from`, once `count` of them are there and one matches `awaited`
 * (if given), or 10 s passed.
 */
async function linesSince(
  from: number,
  count: number,
  awaited: (line: string) => boolean = () => true,
): Promise<string[]> {
  const until = Date.now() + 10_000;
  const ready = (): boolean => lines.length - from >= count && lines.slice(from).some(awaited);
  while (!ready() && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  // A moment more: a line too many would show up now.
  await new Promise((r) => setTimeout(r, 500));
  return lines.slice(from);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'npm-start-'));
  child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'local', 'start.ts')], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      LOCAL_RESOURCE_PREFIX: `start-${Date.now().toString(36)}-`,
      LOCAL_LOG_FILE: join(dir, 'npm-start.log'),
      LOCAL_RUNNER_INFO_FILE: join(dir, 'runner.json'),
      PORT: '0',
      LOCAL_DEMO_PORT: '0',
      POOL_TARGETS: 'EC-P256=4',
      LOCAL_READY_MIN_KEYS: 'EC-P256=2',
      LOCAL_WARMUP_SECONDS: '0',
      LOCAL_CONSUMERS: '1',
      LOCAL_KEYGEN_INTERVAL_SECONDS: '3600',
      // What a developer has: the functions log every request at INFO.
      LOG_LEVEL: 'INFO',
    },
  });
  const up = new Promise<void>((resolve, reject) => {
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        lines.push(line);
        if (line.startsWith('Ctrl-C stops everything')) resolve();
      });
    }
    child.once('exit', (code) => reject(new Error(`npm start exited (${code}):\n${lines.join('\n')}`)));
  });
  await up;
  const text = lines.join('\n');
  banner = {
    url: /Signing pipeline is up: (\S+)/.exec(text)![1],
    apiKey: /API key \(client "[^"]+"\): (\S+)/.exec(text)![1],
    logFile: /the functions' JSON logs in (\S+)/.exec(text)![1],
  };
});

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(-child.pid!, 'SIGTERM');
    await exited;
  }
  await rm(dir, { recursive: true, force: true });
});

test('the console: the banner, one access line per request, no JSON; the log file: the JSON lines', async () => {
  expect(banner.logFile).toBe(join(dir, 'npm-start.log'));
  expect(lines.filter(isJson)).toEqual([]);
  // Before the banner the requests are the runner's own (its health polls while the pool fills): filed only.
  const bannerAt = lines.findIndex((line) => line.startsWith('Signing pipeline is up'));
  expect(lines.slice(0, bannerAt).filter(isAccess)).toEqual([]);
  const base = new URL(banner.url).pathname;

  // A signature: the API, the consumer and the CA all log (JSON at INFO) while it is made.
  const signed = await signSample(banner.url, banner.apiKey, 0);
  // Its own access lines come through the child's output a moment after the answers.
  await linesSince(0, 0, (line) => line.startsWith(`POST ${base}/sign-requests 200 `));
  // Three calls of known outcome: three access lines, nothing else.
  const from = lines.length;
  expect((await call(`${banner.url}/health`, { apiKey: banner.apiKey })).status).toBe(200);
  expect((await call(`${banner.url}/sign-requests/${signed.id}`, { apiKey: banner.apiKey })).status).toBe(
    200,
  );
  expect((await call(`${banner.url}/no-such-route`, { apiKey: banner.apiKey })).status).toBe(404);
  const shown = await linesSince(from, 3);
  expect(shown).toHaveLength(3);
  expect(shown[0]).toMatch(new RegExp(`^GET ${base}/health 200 \\d+\\.\\dms client=\\S+$`));
  expect(shown[1]).toMatch(new RegExp(`^GET ${base}/sign-requests/${signed.id} 200 \\d+\\.\\dms client=`));
  expect(shown[2]).toMatch(new RegExp(`^GET ${base}/no-such-route 404 \\d+\\.\\dms client=`));
  expect(lines.filter(isJson)).toEqual([]);

  const filed = (await readFile(banner.logFile, 'utf8')).split('\n');
  const services = new Set(
    filed
      .filter(isJson)
      .map((l) => (JSON.parse(l.replace(/^\[[\w-]+\] /, '')) as { service?: string }).service),
  );
  expect([...services]).toEqual(expect.arrayContaining(['api', 'signer']));
  // The file is the whole record: the access lines are there too.
  expect(filed).toEqual(expect.arrayContaining(shown));
  expect(filed.filter(isAccess).some((line) => line.startsWith(`GET ${base}/health 503 `))).toBe(true);
});

test('the banner names the DSS-Ext door, whose SP metadata and SAML IdP answer', async () => {
  const text = lines.join('\n');
  const [, signUrl, spMetadata, idpMetadata] =
    /DSS-Ext \(Swedish eID sign requests\): POST (\S+)\s+SP metadata (\S+)\s+SAML IdP (\S+)/.exec(text) ?? [];
  expect(signUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/dss\/v1\/sign$/);
  const sp = await fetch(spMetadata!);
  expect(sp.status).toBe(200);
  expect(await sp.text()).toContain(`Location="${signUrl!.replace(/\/sign$/, '/saml/acs')}"`);
  const idp = await fetch(idpMetadata!);
  expect(idp.status).toBe(200);
  expect(await idp.text()).toContain('IDPSSODescriptor');
  expect(text).toMatch(/registered e-service \S+: key \.local\/dss-ext\/eservice\/key\.pem/);
});
