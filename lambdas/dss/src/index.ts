export { DSS_STATUS } from './status';
export { DssUntrustedRequestError } from './errors';
export { pipelineRequestOf, taskDocuments } from './pipeline';
export { prepareSignTask } from './task-preparer';
export { readSignRequest, type ReadResult } from './sign-request';
export { buildSignResponse, signSignResponse, type SignResponseInput } from './sign-response';
export type { DssClientRegistration, DssServiceContext, SignRequest } from './types';
