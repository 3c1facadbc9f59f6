export { SsmParameterStore, type ParameterStoreOptions } from './parameter-store';
export { pinFromSecret, resolvePin } from './pin';
