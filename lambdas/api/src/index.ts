export { handleApiEvent } from './api';
export { ApiError } from './errors';
export {
  MAX_WAIT_SECONDS,
  read,
  submit,
  type Accepted,
  type ReadCall,
  type ReadOutcome,
  type Refused,
  type Result,
  type SubmitCall,
  type SubmitOutcome,
} from './intake';
export type { ApiDeps, RequestEndings } from './types';
export type { DocumentView, SignRequestView } from './view';
export { RequestEndingSignals } from './request-endings';
export { SignRequestAdmission } from './admission';
