export { handleApiEvent } from './api';
export type { Admission, ApiDeps } from './types';
export { SignRequestAdmission } from './admission';
