export type {
  CaCertificates,
  CaCertificateStore,
  IssuedCertificateRecord,
  IssuedCertificateStore,
} from '@pipeline/core';
