export { handleCscEvent } from './routes';
export type { CscDoorDeps } from './types';
