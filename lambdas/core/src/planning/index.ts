export { PlanInputError } from './errors';
export { plan } from './plan';
export type { Plan } from './types';
