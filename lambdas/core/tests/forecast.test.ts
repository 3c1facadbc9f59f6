import { HOUR_MS, WEEK_BUCKETS, forecast, weeklyProfile, ForecastInputError } from '../src/forecast';
import { DAY_SHAPE, HOUR_SHAPE, expectedAt, syntheticSeries } from './synthetic';

/** 2024-01-01 was a Monday: hour 0 of the synthetic series is Monday 00:00 UTC. */
const MONDAY = Date.UTC(2024, 0, 1);
const TRAIN_WEEKS = 6;

function wape(actual: readonly number[], predicted: readonly number[]): number {
  let err = 0;
  let sum = 0;
  actual.forEach((a, i) => {
    err += Math.abs(a - predicted[i]);
    sum += a;
  });
  return err / sum;
}

describe('forecast (Holt-Winters, weekly season)', () => {
  // Base 20/hour: peak hours ~300 requests, nights ~20: Poisson noise alone is ~5% of a peak bucket.
  const series = syntheticSeries((TRAIN_WEEKS + 1) * WEEK_BUCKETS, 20, 7, 0.02);
  const train = series.slice(0, TRAIN_WEEKS * WEEK_BUCKETS);
  const heldOut = series.slice(TRAIN_WEEKS * WEEK_BUCKETS);
  const history = { start: MONDAY, bucketMs: HOUR_MS, counts: { 'RSA-2048': train } };

  it('predicts a held-out week within 12% WAPE (Poisson noise alone ~7%, measured ~9%)', () => {
    const f = forecast(history);
    const k = f.keyTypes['RSA-2048']!;
    expect(k.method).toBe('holt-winters');
    expect(f.start).toBe(MONDAY + TRAIN_WEEKS * WEEK_BUCKETS * HOUR_MS);
    const error = wape(heldOut, k.mean);
    const noiseFloor = wape(
      heldOut,
      heldOut.map((_, i) => expectedAt(TRAIN_WEEKS * WEEK_BUCKETS + i, 20, 0.02)),
    );
    expect(error).toBeLessThan(0.12);
    // The model must also beat the naive "same hour last week" forecast.
    expect(error).toBeLessThan(wape(heldOut, train.slice(-WEEK_BUCKETS)));
    expect(noiseFloor).toBeLessThan(error + 0.01);
  });

  it.each([11, 23, 42])('stays within 12%% WAPE on the held-out week of seed %d too', (seed) => {
    const s = syntheticSeries((TRAIN_WEEKS + 1) * WEEK_BUCKETS, 20, seed, 0.02);
    const f = forecast({
      start: MONDAY,
      bucketMs: HOUR_MS,
      counts: { 'RSA-2048': s.slice(0, TRAIN_WEEKS * WEEK_BUCKETS) },
    });
    expect(wape(s.slice(TRAIN_WEEKS * WEEK_BUCKETS), f.keyTypes['RSA-2048']!.mean)).toBeLessThan(0.12);
  });

  it('keeps the known shape: the busiest forecast hour is a weekday late morning, the quietest a night', () => {
    const mean = forecast(history).keyTypes['RSA-2048']!.mean;
    const busiest = mean.indexOf(Math.max(...mean));
    const quietest = mean.indexOf(Math.min(...mean));
    expect(HOUR_SHAPE[busiest % 24]).toBeGreaterThanOrEqual(12);
    expect(Math.floor(busiest / 24)).toBeLessThan(5);
    expect(HOUR_SHAPE[quietest % 24] * DAY_SHAPE[Math.floor(quietest / 24)]).toBeLessThanOrEqual(1);
  });

  it('puts about the quantile of held-out buckets under the upper bound', () => {
    const k = forecast(history, { quantile: 0.95 }).keyTypes['RSA-2048']!;
    const covered = heldOut.filter((a, i) => a <= k.upper[i]).length / heldOut.length;
    // Measured 0.85-0.91 over seeds for q = 0.95: the 2%/week growth is only partly tracked.
    expect(covered).toBeGreaterThan(0.8);
    k.upper.forEach((u, i) => expect(u).toBeGreaterThanOrEqual(k.mean[i]));
  });

  it('raises the forecast by the multiplier inside a known event window and nowhere else', () => {
    const plain = forecast(history).keyTypes['RSA-2048']!;
    const start = MONDAY + (TRAIN_WEEKS * WEEK_BUCKETS + 30) * HOUR_MS;
    const event = { name: 'filing deadline', start, end: start + 6 * HOUR_MS, multiplier: 4 };
    const raised = forecast(history, { events: [event] }).keyTypes['RSA-2048']!;
    raised.mean.forEach((m, i) => {
      const inside = i >= 30 && i < 36;
      expect(m).toBeCloseTo(plain.mean[i] * (inside ? 4 : 1), 6);
      expect(raised.upper[i]).toBeCloseTo(plain.upper[i] * (inside ? 4 : 1), 6);
    });
    // An event for another key type leaves this one alone.
    const other = forecast(history, { events: [{ ...event, keyTypes: ['EC-P256'] }] }).keyTypes['RSA-2048']!;
    expect(other.mean).toEqual(plain.mean);
  });
});

describe('forecast cold start', () => {
  const profile = weeklyProfile(10, HOUR_SHAPE, DAY_SHAPE);

  it('uses the default profile scaled to a short history', () => {
    const short = syntheticSeries(48, 20, 3);
    const f = forecast(
      { start: MONDAY, bucketMs: HOUR_MS, counts: { 'RSA-2048': short } },
      { defaultProfile: profile },
    );
    const k = f.keyTypes['RSA-2048']!;
    expect(k.method).toBe('default-profile');
    // Forecast starts Wednesday 00:00: its shape is the profile's, its level the history's (~20 x shape).
    const expected = Array.from({ length: 168 }, (_, i) => expectedAt(48 + i, 20));
    expect(wape(expected, k.mean)).toBeLessThan(0.1);
    k.upper.forEach((u, i) => expect(u).toBeCloseTo(k.mean[i] * 1.5, 6));
  });

  it('uses the profile level when there is no history at all', () => {
    const f = forecast(
      { start: MONDAY, bucketMs: HOUR_MS, counts: { 'RSA-2048': [] } },
      { defaultProfile: profile },
    );
    const total = f.keyTypes['RSA-2048']!.mean.reduce((a, b) => a + b, 0);
    expect(total).toBeCloseTo(10 * 168, 6);
  });

  it('rejects buckets that are not hours', () => {
    expect(() => forecast({ start: MONDAY, bucketMs: 300_000, counts: {} })).toThrow(ForecastInputError);
  });
});

describe('forecast with an event in the history', () => {
  it('divides a past event out of the history instead of learning it as level or trend', () => {
    const weeks = TRAIN_WEEKS;
    const clean = syntheticSeries(weeks * WEEK_BUCKETS, 20, 5);
    // The last 3 days of history were a deadline at 5x demand.
    const eventStart = MONDAY + (weeks * WEEK_BUCKETS - 72) * HOUR_MS;
    const event = { name: 'deadline', start: eventStart, end: eventStart + 72 * HOUR_MS, multiplier: 5 };
    const inflated = clean.map((c, i) => (i >= weeks * WEEK_BUCKETS - 72 ? c * 5 : c));
    const expected = forecast({ start: MONDAY, bucketMs: HOUR_MS, counts: { 'RSA-2048': clean } });
    const withEvent = forecast(
      { start: MONDAY, bucketMs: HOUR_MS, counts: { 'RSA-2048': inflated } },
      { events: [event] },
    );
    const ignored = forecast({ start: MONDAY, bucketMs: HOUR_MS, counts: { 'RSA-2048': inflated } });
    const total = (f: typeof expected): number => f.keyTypes['RSA-2048']!.mean.reduce((a, b) => a + b, 0);
    expect(total(withEvent)).toBeCloseTo(total(expected), 6);
    // Not configuring it would have raised next week's forecast.
    expect(total(ignored)).toBeGreaterThan(total(expected) * 1.2);
  });
});
