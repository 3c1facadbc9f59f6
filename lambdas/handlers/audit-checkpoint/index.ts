/**
 * The checkpointer's entry point: wired once per execution environment from its configuration, which is
 * read from the environment here and nowhere else.
 */
import { loadAuditCheckpointFunctionConfig } from '@pipeline/config';
import { createAuditCheckpointHandler, wireAuditCheckpoint } from './handler';

export const handler = createAuditCheckpointHandler(
  wireAuditCheckpoint(loadAuditCheckpointFunctionConfig(process.env)),
);
