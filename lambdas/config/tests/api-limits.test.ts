/** The local gateway's limits from LOCAL_* variables, under the same rule as the stack's. */
import { ConfigError, apiLimitsProblem, loadPipelineConfig } from '../src';

test('defaults: stage 1000/s (burst 2000), each client 500/s (burst 1000), no quota', () => {
  expect(loadPipelineConfig({}).local.limits).toEqual({
    stage: { rateLimit: 1000, burstLimit: 2000 },
    client: { rateLimit: 500, burstLimit: 1000, quotaPerDay: 0 },
  });
  expect(
    loadPipelineConfig({
      LOCAL_STAGE_RATE_LIMIT: '20',
      LOCAL_CLIENT_RATE_LIMIT: '5',
      LOCAL_CLIENT_QUOTA_PER_DAY: '100',
    }).local.limits,
  ).toEqual({
    stage: { rateLimit: 20, burstLimit: 2000 },
    client: { rateLimit: 5, burstLimit: 1000, quotaPerDay: 100 },
  });
});

test("a client's limit at or above the stage's is refused, naming the variable", () => {
  const error = (env: Record<string, string>): ConfigError => {
    try {
      loadPipelineConfig(env);
    } catch (err) {
      if (err instanceof ConfigError) return err;
    }
    throw new Error('no ConfigError');
  };
  expect(error({ LOCAL_CLIENT_RATE_LIMIT: '1000' }).variable).toBe('LOCAL_CLIENT_RATE_LIMIT');
  expect(error({ LOCAL_STAGE_BURST_LIMIT: '1000' }).variable).toBe('LOCAL_CLIENT_BURST_LIMIT');
  expect(
    apiLimitsProblem({
      stage: { rateLimit: 10, burstLimit: 20 },
      client: { rateLimit: 9, burstLimit: 19, quotaPerDay: 0 },
    }),
  ).toBeUndefined();
});
