import { isTerminal, type SignRequestRecord } from '@pipeline/core/signing';
import type { ApiDeps } from './types';

/** With word of ended requests, a wait still reads at least this often (ms): a word may be lost. */
const ENDED_FALLBACK_MS = 1000;

/**
 * The long-poll of GET and of POST with wait: the request as last read once it is `signed` or `failed`,
 * or at the deadline. With word of ended requests (deps.endings) it reads when the word comes, and
 * otherwise only every ENDED_FALLBACK_MS or half the request's age, whichever is longer (a lost word): a
 * client that waits again and again for a request stuck in a backlog reads it about as often as one wait. Without, it polls often at first (most
 * requests finish within tens of ms), then less the longer the wait: under a backlog, waiting clients
 * must not flood the table with reads and slow down the very work they await.
 */
export async function waitUntilTerminal(
  first: SignRequestRecord,
  deps: ApiDeps,
  deadline: number,
): Promise<SignRequestRecord> {
  let record = first;
  const waitStarted = Date.now();
  // The request's age, not this wait's: a later wait for the same request starts where the last left off.
  const since = Math.min(waitStarted, first.receivedAt);
  // Any word counts before the first read of this wait (the record may have ended just before it began).
  let lastRead = -1;
  for (;;) {
    if (isTerminal(record.status)) return record;
    const now = Date.now();
    if (deps.endings) {
      const left = deadline - now;
      if (left <= 0) return record;
      const fallback = Math.max(ENDED_FALLBACK_MS, (now - since) / 2);
      const said = await deps.endings.wait(record.id, Math.min(left, fallback), lastRead);
      if (!said && Date.now() >= deadline) return record;
    } else {
      const delay = Math.min(1000, Math.max(25, (now - waitStarted) / 4));
      if (now + delay >= deadline) return record;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
    lastRead = deps.endings?.mark() ?? 0;
    record = (await deps.requests.get(record.id)) ?? record;
  }
}
