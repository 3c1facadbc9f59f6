export { DSS_STATUS, type DssStatus } from './status';
export { DssRefusal, DssUntrustedRequestError } from './errors';
export { pipelineRequestOf, taskDocuments, type PipelineRequest } from './pipeline';
export { prepareSignTask } from './task-preparer';
export { readSignRequest, type ReadResult, type ReplyTo } from './sign-request';
export { buildSignResponse, signSignResponse, type SignResponseInput } from './sign-response';
export type { DssClientRegistration, DssServiceContext, SignRequest } from './types';
