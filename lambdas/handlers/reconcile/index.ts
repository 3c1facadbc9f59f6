/**
 * The reconciler's entry point: wired once per execution environment from its configuration, which is read
 * from the environment here and nowhere else.
 */
import { loadQueueFunctionConfig } from '@pipeline/config';
import { createReconcileHandler, wireReconcile } from './handler';

export const handler = createReconcileHandler(wireReconcile(loadQueueFunctionConfig(process.env)));
