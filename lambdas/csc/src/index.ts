export { handleCscEvent } from './routes';
export type { CscDoorDeps, CscSettings, Intake } from './types';
