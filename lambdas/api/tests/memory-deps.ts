/**
 * The API's ports in memory, for the unit tests of the API and of its intake: records in a map, the ids
 * sent to the queue in a list, every identity assertion verified (identity.test.ts covers assertions).
 */
import type { SignRequestRecord } from '@pipeline/core/signing';
import { anyAssertion, memoryAssertionStore } from '../../test-support/test-issuer';
import type { ApiDeps } from '../src';

export function memoryDeps(
  overrides: Partial<ApiDeps> = {},
): ApiDeps & { records: Map<string, SignRequestRecord>; sent: string[] } {
  const records = new Map<string, SignRequestRecord>();
  const sent: string[] = [];
  return {
    records,
    sent,
    requests: {
      create: async (r) => (records.has(r.id) ? false : (records.set(r.id, r), true)),
      get: async (id) => records.get(id),
      discard: async (id) => void records.delete(id),
    },
    queue: {
      enqueue: async (id) => void sent.push(id),
      depth: async () => ({ visible: sent.length, inFlight: 0 }),
    },
    pool: { available: async () => ({ 'RSA-2048': 3, 'EC-P256': 0 }) },
    settings: {
      maxBodyBytes: 16384,
      retentionSeconds: 3600,
      rejectWhenPoolEmpty: false,
      retryAfterSeconds: 30,
    },
    // These tests are about the API's other rules: every assertion verifies (identity.test.ts covers
    // identity assertions).
    identity: { verifier: anyAssertion, assertions: memoryAssertionStore() },
    ...overrides,
  };
}
