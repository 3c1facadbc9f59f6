/** The reconciler's entry point: wired from configuration once per execution environment. */
import { createReconcileHandler, wireReconcile } from './handler';

export const handler = createReconcileHandler(wireReconcile());
