import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Outcome } from '../load';
import { jvmGcMarkers, stalls, timeline } from '../timeline';

const outcome = (sentAt: number, latencyMs: number): Outcome => ({
  phase: 'p',
  scheduledAt: sentAt,
  sentAt,
  latencyMs,
  ok: true,
  status: 'signed',
});

describe('the e2e timeline', () => {
  test('puts requests in the second they completed, markers in theirs, and names the slow second', () => {
    const start = Date.parse('2026-11-25T10:00:00.000Z');
    const outcomes = [
      outcome(0, 100),
      outcome(100, 120),
      outcome(900, 200), // completes in second 1
      outcome(1500, 900), // completes in second 2, slowly
      outcome(1600, 800),
    ];
    const seconds = timeline(
      outcomes,
      [
        { at: start + 2100, what: 'gc runner', ms: 40 },
        { at: start + 2500, what: 'gc runner', ms: 20 },
        { at: start + 2600, what: 'audit-checkpoint', ms: 260 },
      ],
      start,
    );
    expect(seconds.map((s) => [s.s, s.sent, s.done])).toEqual([
      [0, 3, 2],
      [1, 2, 1],
      [2, 0, 2],
    ]);
    expect(seconds[2].p99).toBe(900);
    expect(seconds[2].markers).toBe('gc runner 2x 60ms, audit-checkpoint 260ms');
    expect(stalls(seconds, 150).map((s) => s.s)).toEqual([2]);
    expect(stalls(seconds, 500)).toEqual([]);
  });

  test("reads the JVMs' pauses from their -Xlog:gc files, named by the process", () => {
    const dir = mkdtempSync(join(tmpdir(), 'jvm-gc-'));
    try {
      writeFileSync(
        join(dir, 'jvm-gc-4242.log'),
        [
          '[2026-11-25T10:00:01.250+0000] Using Serial',
          '[2026-11-25T10:00:02.500+0000] GC(0) Pause Young (Allocation Failure) 20M->5M(60M) 12.345ms',
          '',
        ].join('\n'),
      );
      writeFileSync(
        join(dir, 'jvm-gc-7.log'),
        '[2026-11-25T10:00:03.000+0000] GC(1) Pause Full (Allocation Failure) 50M->20M(60M) 80.5ms\n',
      );
      const markers = jvmGcMarkers(dir, new Map([[4242, 'DynamoDB Local']]));
      expect(markers).toEqual(
        expect.arrayContaining([
          { at: Date.parse('2026-11-25T10:00:02.500Z'), what: 'gc DynamoDB Local', ms: 12.345 },
          { at: Date.parse('2026-11-25T10:00:03.000Z'), what: 'gc JVM', ms: 80.5 },
        ]),
      );
      expect(markers).toHaveLength(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
