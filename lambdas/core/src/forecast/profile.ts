import { ForecastInputError } from './errors';
import { WEEK_BUCKETS, type DefaultProfile } from './types';

/** Epoch day 0 (1970-01-01) was a Thursday: Monday-first hour of week for an epoch ms in local time. */
export function hourOfWeek(epochMs: number, timeZoneOffsetMinutes = 0): number {
  const localHours = Math.floor((epochMs + timeZoneOffsetMinutes * 60_000) / 3_600_000);
  return (((localHours + 3 * 24) % WEEK_BUCKETS) + WEEK_BUCKETS) % WEEK_BUCKETS;
}

/** A weekly profile from a 24-hour day shape and 7 day factors (Monday first). */
export function weeklyProfile(
  meanPerBucket: number,
  hourWeights: readonly number[],
  dayWeights: readonly number[],
): DefaultProfile {
  if (hourWeights.length !== 24 || dayWeights.length !== 7) {
    throw new ForecastInputError(
      'a weekly profile needs 24 hour weights and 7 day weights',
      'defaultProfile',
    );
  }
  const weights: number[] = [];
  for (let d = 0; d < 7; d++) for (let h = 0; h < 24; h++) weights.push(dayWeights[d] * hourWeights[h]);
  return { meanPerBucket, weights };
}

/**
 * Office-hours shape of an e-service: busy 08-18 on weekdays with a late-morning high, quiet nights,
 * weekends at a fifth. Only a cold-start guess: real history replaces it after two weeks.
 */
export const OFFICE_HOURS_PROFILE: DefaultProfile = weeklyProfile(
  100,
  [1, 1, 1, 1, 1, 1, 2, 4, 8, 10, 12, 12, 10, 10, 9, 8, 7, 5, 4, 3, 3, 2, 2, 1],
  [1, 1, 1, 1, 1, 0.2, 0.2],
);

/** The profile's weights normalised to mean 1, validated. */
export function normalisedWeights(profile: DefaultProfile): number[] {
  if (profile.weights.length !== WEEK_BUCKETS || profile.weights.some((w) => !(w >= 0))) {
    throw new ForecastInputError(
      `a default profile needs ${WEEK_BUCKETS} non-negative weights`,
      'defaultProfile',
    );
  }
  const sum = profile.weights.reduce((a, b) => a + b, 0);
  if (sum <= 0) throw new ForecastInputError('a default profile needs a positive weight', 'defaultProfile');
  return profile.weights.map((w) => (w * WEEK_BUCKETS) / sum);
}
