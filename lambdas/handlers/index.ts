/**
 * Every function's handler factory and its wiring from configuration, for hosts other than Lambda (the
 * local runner): `createXHandler(wireX(config))` is what each function's entry point (`<name>/index.ts`)
 * runs at init, with the configuration it parsed from process.env (`load<X>FunctionConfig`). Nothing here
 * wires itself at import, and no wiring reads its settings from the environment (only the logger's level,
 * LOG_LEVEL, as Powertools reads its own variables).
 */
export { createApiHandler, wireApi, type ApiHandlerDeps } from './api/handler';
export { createCscHandler, wireCsc } from './csc/handler';
export { createDssExtHandler, wireDssExt } from './dssext/handler';
export { checkpointRound, wireAuditCheckpoint } from './audit-checkpoint/handler';
export { createCaHandler, wireCa } from './ca/handler';
export { createCrlHandler, wireCrl } from './crl/handler';
export { createKeygenHandler, wireKeygen } from './keygen/handler';
export { createOcspHandler, wireOcsp } from './ocsp/handler';
export { createReconcileHandler, wireReconcile } from './reconcile/handler';
export { createRevokeHandler, wireRevoke } from './revoke/handler';
export { createSignerHandler, wireSigner } from './signer/handler';
export { createTsaHandler, wireTsa } from './tsa/handler';
export { decorateSharedHsm, sharedHsm } from './shared/hsm';
export { decorateCaSideHsm } from './shared/ca-login';
export { createMetrics } from './shared/observability';
