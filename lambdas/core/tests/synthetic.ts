/** Test support: seeded synthetic demand with a known weekly shape (no Math.random: reruns agree). */

export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Poisson sample: Knuth for small means, normal approximation above 50. */
export function poisson(mean: number, random: () => number): number {
  if (mean > 50) {
    const u = Math.max(1e-12, random());
    const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
    return Math.max(0, Math.round(mean + z * Math.sqrt(mean)));
  }
  const limit = Math.exp(-mean);
  let k = 0;
  let p = random();
  while (p > limit) {
    k++;
    p *= random();
  }
  return k;
}

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
