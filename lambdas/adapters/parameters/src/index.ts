export { SsmParameterStore } from './parameter-store';
export { resolvePin } from './pin';
