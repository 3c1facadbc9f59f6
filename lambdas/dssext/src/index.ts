export { handleDssExtEvent } from './routes';
export type { DssExtDoorDeps, DssExtStore, DssFlow, SamlLogin } from './types';
