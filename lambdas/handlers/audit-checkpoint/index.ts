/** The checkpointer's entry point: wired from configuration once per execution environment. */
import { createAuditCheckpointHandler, wireAuditCheckpoint } from './handler';

export const handler = createAuditCheckpointHandler(wireAuditCheckpoint());
