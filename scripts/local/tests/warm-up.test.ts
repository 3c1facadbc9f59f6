/** The banner's warm-up line: whether it got warm and, if not, what ended it, with the real figures. */
import { warmUpSummary, type WarmUpResult } from '../warm-up';

const LIMITS = { maxSeconds: 60, maxRequests: 70, boundMs: 300 };
const result = (overrides: Partial<WarmUpResult>): WarmUpResult => ({
  seconds: 5.7,
  requests: 50,
  failed: 0,
  lastP99Ms: 412,
  warm: false,
  stoppedBy: 'bound',
  ...overrides,
});

test('warm: done, with the count, the time and the p99', () => {
  expect(warmUpSummary(result({ warm: true, lastP99Ms: 180 }), LIMITS)).toBe(
    'done (50 self-test signatures in 5.7 s, last 2 s p99 180 ms)',
  );
});

test('stopped at the bound but not warm once the last answers came: says so, not "within 60 s or 70 keys"', () => {
  const line = warmUpSummary(result({}), LIMITS);
  expect(line).toBe(
    'NOT warm: the p99 was within 300 ms when sending stopped, not once the last answers came (last 2 s p99 412 ms) (50 self-test signatures in 5.7 s): expect slow first requests',
  );
  expect(line).not.toMatch(/60 s|70 keys/);
});

test('the time limit and the key budget each name their own figure', () => {
  expect(warmUpSummary(result({ stoppedBy: 'time', seconds: 60.4, requests: 600 }), LIMITS)).toBe(
    'NOT warm: the time limit (60 s) ended it: last 2 s p99 412 ms, over 300 ms (600 self-test signatures in 60.4 s): expect slow first requests',
  );
  expect(warmUpSummary(result({ stoppedBy: 'keys', requests: 70, failed: 2, seconds: 7.1 }), LIMITS)).toBe(
    'NOT warm: the key budget (70 keys) ran out: last 2 s p99 412 ms, over 300 ms (70 self-test signatures, 2 failed in 7.1 s): expect slow first requests',
  );
});

test('no answers in the last two seconds: said in words, not "Infinity ms"', () => {
  expect(warmUpSummary(result({ stoppedBy: 'time', lastP99Ms: undefined }), LIMITS)).toContain(
    'no answers in the last 2 s',
  );
});
