/** Test support: seeded synthetic demand with a known weekly shape (no Math.random: reruns agree). */

// One seeded generator for tests and the simulator: reruns agree.
import { mulberry32, poisson } from '../../../scripts/simulate/rng';

export { mulberry32, poisson };

export const HOUR_SHAPE = [1, 1, 1, 1, 1, 2, 3, 6, 10, 12, 14, 13, 11, 12, 12, 11, 9, 7, 5, 4, 3, 2, 1, 1];
export const DAY_SHAPE = [1, 1.1, 1, 0.9, 0.8, 0.3, 0.2];

/** Expected requests in hour t (t = 0 is a Monday 00:00) with a weekly growth factor. */
export function expectedAt(t: number, base: number, weeklyGrowth = 0): number {
  const hour = t % 24;
  const day = Math.floor(t / 24) % 7;
  return base * HOUR_SHAPE[hour] * DAY_SHAPE[day] * (1 + (weeklyGrowth * t) / 168);
}

export function syntheticSeries(hours: number, base: number, seed: number, weeklyGrowth = 0): number[] {
  const random = mulberry32(seed);
  return Array.from({ length: hours }, (_, t) => poisson(expectedAt(t, base, weeklyGrowth), random));
}
