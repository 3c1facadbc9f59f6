export { SsmParameterStore } from './parameter-store';
export { resolvePin } from './pin';
export { caCertificateStore, fileCaCertificateStore } from './ca-certificates';
