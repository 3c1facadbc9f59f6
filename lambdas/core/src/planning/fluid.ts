/**
 * The fluid model of the pool: keys as a continuous quantity, demand and generation per bucket. Capacity
 * is in HSM-seconds so key types with different keygen rates can share it.
 */

/**
 * Stock each key type must hold at the start of every bucket so that, generating at full capacity from
 * there on, no demand in the horizon goes unserved. Backward recursion
 *   R(b) = max(0, d(b) + R(b+1) - c(b)),  R(B) = 0,
 * which for one key type equals max over t >= b of (demand b..t - capacity b..t). With several key types a
 * short bucket's capacity is split in proportion to each type's need (in HSM-seconds): the total is exact,
 * the split is a choice.
 * @param demand keys per bucket, one array per key type
 * @param secondsPerKey HSM-seconds one key of each type costs
 * @param capacity HSM-seconds available for generation per bucket
 * @returns per key type, B + 1 values: the stock needed at the start of each bucket (and 0 at the end)
 */
export function requiredStock(
  demand: readonly (readonly number[])[],
  secondsPerKey: readonly number[],
  capacity: readonly number[],
): Float64Array[] {
  const buckets = capacity.length;
  const required = demand.map(() => new Float64Array(buckets + 1));
  for (let b = buckets - 1; b >= 0; b--) {
    let needSeconds = 0;
    for (let k = 0; k < demand.length; k++)
      needSeconds += (demand[k][b] + required[k][b + 1]) * secondsPerKey[k];
    const uncovered = needSeconds > capacity[b] ? 1 - capacity[b] / needSeconds : 0;
    for (let k = 0; k < demand.length; k++) required[k][b] = (demand[k][b] + required[k][b + 1]) * uncovered;
  }
  return required;
}

/** First bucket in which a pool of `depth` runs dry with `capacityKeys` generated per bucket; -1 if never. */
export function firstDryBucket(
  depth: number,
  demand: readonly number[],
  capacityKeys: readonly number[],
): number {
  let stock = depth;
  for (let b = 0; b < demand.length; b++) {
    stock += capacityKeys[b] - demand[b];
    // A small tolerance: the fluid numbers are sums of floats.
    if (stock < -1e-6) return b;
  }
  return -1;
}
