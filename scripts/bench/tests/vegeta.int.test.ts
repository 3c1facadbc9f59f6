/**
 * The external suite's vegeta part (vegeta.ts): the real vegeta, installed by the set-up as the suite
 * installs it (install-vegeta.sh), attacks a small local HTTP server playing the API at 20/s for 1 s from
 * the targets file we build; its encoded results are read back into the figures. The server sees each
 * body once with the API key, and the figures match what it answered and vegeta's own report. A second
 * test reads recorded lines of the other kinds vegeta writes (no answer, another time zone).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { phaseStats } from '../e2e-run';
import {
  attack,
  ensureVegeta,
  parseEncoded,
  signTargets,
  statusCodes,
  toOutcomes,
  VEGETA_BIN,
} from '../vegeta';

interface Seen {
  readonly url: string;
  readonly method: string;
  readonly apiKey: string | string[] | undefined;
  readonly contentType: string | undefined;
  readonly body: { n: number };
}

let dir: string;
let server: Server;
let apiUrl: string;
const seen: Seen[] = [];

/** Its answer to body n: 202 (not ended) for every 7th, 500 for n = 5, `failed` for n = 11, else signed after 40 ms. */
function answer(n: number): { code: number; body: Record<string, unknown>; delayMs: number } {
  if (n === 5) return { code: 500, body: { error: { code: 'internal' } }, delayMs: 0 };
  if (n % 7 === 3) return { code: 202, body: { id: `r${n}`, status: 'signing' }, delayMs: 60 };
  if (n === 11)
    return {
      code: 200,
      body: { id: `r${n}`, status: 'failed', error: { code: 'key_unavailable' } },
      delayMs: 40,
    };
  return { code: 200, body: { id: `r${n}`, status: 'signed', pooledKey: true }, delayMs: 40 };
}

async function readBody(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req) text += (chunk as Buffer).toString();
  return text;
}

beforeAll(async () => {
  ensureVegeta();
  dir = mkdtempSync(join(tmpdir(), 'vegeta-test-'));
  server = createServer((req, res) => {
    void readBody(req).then((text) => {
      const body = JSON.parse(text) as { n: number };
      seen.push({
        url: req.url ?? '',
        method: req.method ?? '',
        apiKey: req.headers['x-api-key'],
        contentType: req.headers['content-type'],
        body,
      });
      const a = answer(body.n);
      setTimeout(() => {
        res.writeHead(a.code, { 'content-type': 'application/json' });
        res.end(JSON.stringify(a.body));
      }, a.delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}, 600_000);

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('vegeta against a local server', () => {
  test('sends each target once with its key, and its results read back into the figures', async () => {
    const bodies = Array.from({ length: 25 }, (_, n) => ({ n })); // 20 sent, 5 spare
    const { results, report } = await attack({
      dir,
      name: 'test',
      targets: signTargets(apiUrl, 'the-api-key', bodies),
      rate: 20,
      seconds: 1,
    });
    expect(VEGETA_BIN.endsWith(join('.local', 'bin', 'vegeta'))).toBe(true);

    // What the server saw: 20 POSTs of the first 20 bodies, each once, with the key and content type.
    expect(seen.map((s) => s.body.n).sort((x, y) => x - y)).toEqual([...Array(20).keys()]);
    for (const s of seen) {
      expect(s).toMatchObject({
        method: 'POST',
        url: '/v1/sign-requests?wait=20',
        apiKey: 'the-api-key',
        contentType: 'application/json',
      });
    }

    // What vegeta recorded, read back: codes and states as the server answered them.
    expect(results).toHaveLength(20);
    const expected = [...Array(20).keys()].map(answer);
    expect(statusCodes(results)).toEqual({ '200': 16, '202': 3, '500': 1 });
    const outcomes = toOutcomes(results, 'test');
    expect(outcomes.filter((o) => o.ok)).toHaveLength(
      expected.filter((e) => e.body.status === 'signed').length,
    );
    expect(outcomes.filter((o) => o.status === 'HTTP 202')).toHaveLength(3);
    expect(outcomes.filter((o) => o.status === 'failed').map((o) => o.error)).toEqual(['key_unavailable']);
    expect(outcomes.filter((o) => o.status === 'HTTP 500')).toHaveLength(1);

    // The figures: 20 requests over ~1 s, latencies at least the server's delay, as vegeta's own report says.
    const stats = phaseStats('test', outcomes);
    expect(stats).toMatchObject({ requests: 20, errors: 5, 'pooled %': 100 });
    expect(stats['offered/s']).toBeGreaterThan(18);
    expect(stats['offered/s']).toBeLessThan(22);
    expect(report.requests).toBe(20);
    expect(report.statusCodes).toEqual({ '200': 16, '202': 3, '500': 1 });
    expect(Math.abs(stats.max - report.max)).toBeLessThan(0.2);
    expect(stats.p50).toBeGreaterThanOrEqual(40);
    expect(Math.abs(stats.p50 - report.p50)).toBeLessThan(Math.max(5, report.p50 * 0.2));
    const sent = outcomes.map((o) => o.sentAt).sort((x, y) => x - y);
    expect(sent[0]).toBe(0);
    expect(sent[19]).toBeGreaterThan(900);
  }, 60_000);

  test('reads recorded lines: no answer, a failed body, nanoseconds and another time zone', () => {
    const b64 = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64');
    const lines = [
      {
        seq: 0,
        code: 200,
        timestamp: '2026-11-26T09:50:21.000000000+01:00',
        latency: 151_500_000,
        error: '',
        body: b64({ status: 'signed' }),
      },
      {
        seq: 1,
        code: 0,
        timestamp: '2026-11-26T08:50:21.100250000Z',
        latency: 30_000_000_000,
        error: 'Post "http://x": context deadline exceeded',
        body: null,
      },
      {
        seq: 2,
        code: 200,
        timestamp: '2026-11-26T08:50:21.200000500Z',
        latency: 80_000_000,
        error: '',
        body: b64({ status: 'failed', error: { code: 'hsm_unavailable' } }),
      },
      {
        seq: 3,
        code: 502,
        timestamp: '2026-11-26T08:50:21.300000000Z',
        latency: 1_000_000,
        error: '502 Bad Gateway',
        body: '',
      },
    ];
    const outcomes = toOutcomes(parseEncoded(`${lines.map((l) => JSON.stringify(l)).join('\n')}\n`), 'p');
    expect(outcomes.map((o) => [o.ok, o.status, o.error])).toEqual([
      [true, 'signed', undefined],
      [false, 'Post "http://x": context deadline exceeded', undefined],
      [false, 'failed', 'hsm_unavailable'],
      [false, 'HTTP 502', undefined],
    ]);
    const sentAt = outcomes.map((o) => o.sentAt);
    [0, 100.25, 200.0005, 300].forEach((ms, i) => expect(sentAt[i]).toBeCloseTo(ms, 3));
    expect(outcomes.map((o) => o.latencyMs)).toEqual([151.5, 30_000, 80, 1]);
    expect(phaseStats('p', outcomes)).toMatchObject({ requests: 4, errors: 3, max: 30_000, p50: 80 });
  });
});
