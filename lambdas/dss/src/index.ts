export {
  DEFAULT_SIGNATURE_ALGORITHM,
  DSS_EXT_PROFILE,
  DSS_NS,
  POST_BINDING,
  SUPPORTED_VERSIONS,
} from './namespaces';
export { DSS_STATUS, type DssStatus } from './status';
export { DssRefusal, DssUntrustedRequestError } from './errors';
export { CERTIFIABLE_ATTRIBUTES, pipelineRequestOf, taskDocuments, type PipelineRequest } from './pipeline';
export { prepareSignTask } from './task-preparer';
export { readSignRequest, type ReadResult, type ReplyTo } from './sign-request';
export {
  buildSignResponse,
  signSignResponse,
  type SignedTask,
  type SignerAssertionInfo,
  type SignResponseInput,
} from './sign-response';
export type {
  AdesType,
  CertType,
  DssClientRegistration,
  DssServiceContext,
  RequestedCertAttribute,
  SamlAttribute,
  SignMessage,
  SignRequest,
  SignTask,
  SigType,
} from './types';
