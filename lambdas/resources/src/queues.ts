import type { QueueDefinition } from './types';

/** Seconds the signer function may run for one batch; the queue's visibility timeout follows from it. */
export const SIGNER_TIMEOUT_SECONDS = 30;

/**
 * The sign request queue (message body = request id; the request itself stays in DynamoDB) and its
 * dead-letter queue. AWS advises a visibility timeout of six times the function timeout for SQS sources.
 */
export const QUEUES = {
  signRequests: {
    id: 'SignRequestQueue',
    envVar: 'SIGN_QUEUE_URL',
    localName: 'sign-requests',
    visibilityTimeoutSeconds: 6 * SIGNER_TIMEOUT_SECONDS,
    maxReceiveCount: 5,
    deadLetter: { id: 'SignRequestDeadLetterQueue', envVar: 'SIGN_DLQ_URL', localName: 'sign-requests-dlq' },
  },
} as const satisfies Record<string, QueueDefinition>;

/** How the signer consumes the queue: the Lambda event source mapping, and the local poller that plays it. */
export const SIGNER_EVENT_SOURCE = {
  batchSize: 10,
  maxBatchingWindowSeconds: 0,
  /** Upper bound of concurrent signer invocations fed by the queue. */
  maxConcurrency: 20,
  reportBatchItemFailures: true,
} as const;
