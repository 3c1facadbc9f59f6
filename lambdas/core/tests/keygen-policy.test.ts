import { HOUR_MS, type DemandHistory } from '../src/forecast';
import { decideKeygen } from '../src/pool';
import type { KeyType } from '../src/shared';
import { loadPlanningConfig } from '../../config/src/planning-config';
import { loadKeygenPolicyConfig, pooledKeyTypes } from '@pipeline/config';

/** Three weeks of hourly history: `perHour` requests in office hours (8-17 UTC, Mon-Fri), none else. */
function officeHistory(keyTypes: readonly KeyType[], perHour: number, end: number): DemandHistory {
  const buckets = 3 * 168;
  const start = end - buckets * HOUR_MS;
  const series = Array.from({ length: buckets }, (_, i) => {
    const at = new Date(start + i * HOUR_MS);
    const weekday = at.getUTCDay() >= 1 && at.getUTCDay() <= 5;
    return weekday && at.getUTCHours() >= 8 && at.getUTCHours() < 17 ? perHour : 0;
  });
  return { start, bucketMs: HOUR_MS, counts: Object.fromEntries(keyTypes.map((k) => [k, series])) };
}

const thisHour = Math.floor(Date.now() / HOUR_MS) * HOUR_MS;

test('targets policy: fixed levels from POOL_TARGETS, always allowed', async () => {
  const decision = await decideKeygen({
    config: loadKeygenPolicyConfig({ KEYGEN_POLICY: 'targets', POOL_TARGETS: 'EC-P256=7' }),
    planning: loadPlanningConfig({}),
    available: {},
    history: () => Promise.reject(new Error('not read')),
    measuredRate: async () => undefined,
  });
  expect(decision).toMatchObject({ policy: 'targets', targets: { 'EC-P256': 7 }, generationAllowed: true });
});

test("forecast policy: demand above what keygen can add makes a positive target below the week's demand", async () => {
  const decision = await decideKeygen({
    config: loadKeygenPolicyConfig({ KEYGEN_KEY_TYPES: 'RSA-2048' }),
    planning: loadPlanningConfig({ FORECAST_HORIZON_DAYS: '7' }),
    available: { 'RSA-2048': 0 },
    history: async (keyTypes) => officeHistory(keyTypes, 200, thisHour),
    // 0.01 keys/s = 864 keys a day against 1,800 requests a business day: the pool must carry the rest.
    measuredRate: async () => 0.01,
  });
  const target = decision.targets['RSA-2048']!;
  const weekDemand = 5 * 9 * 200;
  expect(target).toBeGreaterThan(0);
  expect(target).toBeLessThan(weekDemand);
  expect(decision.plan?.keyTypes['RSA-2048']?.fluidBound).toBeGreaterThan(0);
  expect(decision.targets['EC-P256'] ?? 0).toBe(0);
});

test('forecast policy: paused hours forbid regular generation; the low-water mark is reported', async () => {
  const hour = new Date().getUTCHours();
  const decision = await decideKeygen({
    config: loadKeygenPolicyConfig({ KEYGEN_KEY_TYPES: 'EC-P256', POOL_LOW_WATER: 'EC-P256=25' }),
    planning: loadPlanningConfig({ KEYGEN_PAUSED_HOURS: String(hour) }),
    available: {},
    history: async (keyTypes) => officeHistory(keyTypes, 10, thisHour),
    measuredRate: async () => 50,
  });
  expect(decision.generationAllowed).toBe(false);
  expect(decision.lowWater).toEqual({ 'EC-P256': 25 });
});

test('the keygen settings are validated when read', () => {
  expect(() => loadKeygenPolicyConfig({ HSM_COUNT: '0' })).toThrow(/HSM_COUNT/);
  expect(() => loadKeygenPolicyConfig({ KEYGEN_POLICY: 'fill' })).toThrow(/KEYGEN_POLICY/);
  expect(() => loadKeygenPolicyConfig({ POOL_LOW_WATER: 'EC-P256=-1' })).toThrow(/POOL_LOW_WATER/);
});

test('KEYGEN_KEY_TYPES is validated', () => {
  expect(pooledKeyTypes({ KEYGEN_KEY_TYPES: 'EC-P256, RSA-2048' })).toEqual(['EC-P256', 'RSA-2048']);
  expect(() => pooledKeyTypes({ KEYGEN_KEY_TYPES: 'DSA-1024' })).toThrow(/KEYGEN_KEY_TYPES/);
});
