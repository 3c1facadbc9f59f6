export { handleDssExtEvent } from './routes';
export type { DssExtDoorDeps } from './types';
