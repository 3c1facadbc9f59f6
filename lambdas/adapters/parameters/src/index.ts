export { SsmParameterStore } from './parameter-store';
export { resolvePin } from './pin';
export { readSecretText } from './secret';
export { caCertificateStore, fileCaCertificateStore } from './ca-certificates';
