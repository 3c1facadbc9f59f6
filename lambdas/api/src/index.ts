export { handleApiEvent } from './api';
export { ApiError } from './errors';
export {
  read,
  submit,
  type ReadCall,
  type ReadOutcome,
  type Refused,
  type SubmitCall,
  type SubmitOutcome,
} from './intake';
export type { ApiDeps, RequestEndings } from './types';
export type { SignRequestView } from './view';
export { RequestEndingSignals } from './request-endings';
export { SignRequestAdmission } from './admission';
