/** The revocation function's entry point: wired from configuration once per execution environment. */
import { createRevokeHandler, wireRevoke } from './handler';

export const handler = createRevokeHandler(wireRevoke());
