export { handleApiEvent } from './api';
export type { ApiDeps } from './types';
export { SignRequestAdmission } from './admission';
