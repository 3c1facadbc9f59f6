export { handleApiEvent } from './api';
export type { ApiDeps, RequestEndings } from './types';
export { RequestEndingSignals } from './request-endings';
export { SignRequestAdmission } from './admission';
