import { ConfigError } from '../src/errors';
import { loadPlanningConfig } from '../src/planning-config';

describe('loadPlanningConfig', () => {
  it('has defaults', () => {
    expect(loadPlanningConfig({})).toEqual({
      horizonDays: 7,
      historyWeeks: 8,
      quantile: 0.95,
      maxPoolKeys: 1_000_000,
      pausedHoursOfDay: [],
      timeZoneOffsetMinutes: 0,
      events: [],
    });
  });

  it('reads paused hours and events', () => {
    const c = loadPlanningConfig({
      KEYGEN_PAUSED_HOURS: '10, 11',
      FORECAST_EVENTS: JSON.stringify([
        { name: 'deadline', start: '2025-04-28T00:00:00Z', end: '2025-05-05T00:00:00Z', multiplier: 10 },
      ]),
    });
    expect(c.pausedHoursOfDay).toEqual([10, 11]);
    expect(c.events).toEqual([
      { name: 'deadline', start: Date.UTC(2025, 3, 28), end: Date.UTC(2025, 4, 5), multiplier: 10 },
    ]);
  });

  it.each([
    ['KEYGEN_PAUSED_HOURS', '24'],
    ['FORECAST_QUANTILE', '1.5'],
    ['FORECAST_EVENTS', '{"not":"an array"}'],
    ['FORECAST_EVENTS', '[{"name":"x","start":"2025-05-05","end":"2025-05-01","multiplier":2}]'],
  ])('rejects %s=%s naming the variable', (name, value) => {
    expect(() => loadPlanningConfig({ [name]: value })).toThrow(ConfigError);
    try {
      loadPlanningConfig({ [name]: value });
    } catch (err) {
      expect((err as ConfigError).variable).toBe(name);
    }
  });
});
