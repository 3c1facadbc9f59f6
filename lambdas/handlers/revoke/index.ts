/**
 * The revocation function's entry point: wired once per execution environment from its configuration,
 * which is read from the environment here and nowhere else.
 */
import { loadCaSideFunctionConfig } from '@pipeline/config';
import { createRevokeHandler, wireRevoke } from './handler';

export const handler = createRevokeHandler(wireRevoke(loadCaSideFunctionConfig(process.env)));
