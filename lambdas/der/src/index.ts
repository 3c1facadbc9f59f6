export { buildCsr, buildCsrBySchema, verifyCsr, verifyCsrByParse, verifyOwnCsr } from './csr';
export { keyTypeOfSpki } from './algorithms';
export { encodeName, nameDerOf } from './name';
export { derChildren, pem, pemToDer } from './der';
export {
  buildSignedData,
  prepareCmsContainer,
  signedAttributes,
  signedAttributesDer,
  signerSignatures,
} from './cms';
export { BadCsrError, BadSignTaskError, CsrSignatureInvalidError } from './errors';
export { updateTaskAttributes } from './task-attributes';
export {
  caExtensions,
  keyIdentifier,
  leafExtensions,
  ocspSignerExtensions,
  tsaExtensions,
  parseCertificate,
  randomSerial,
  signCertificate,
  statusPointers,
  type CertificateSigner,
  type ParsedCertificate,
} from './certificate';
export { LeafCertificateTemplate, type LeafVariables } from './certificate-template';
export { CrlInvalidError, signCrl, verifyCrl } from './crl';
export {
  canonicalCertId,
  type OcspAnswer,
  ocspErrorResponse,
  type OcspIssuer,
  ocspIssuerOf,
  OcspMalformedRequestError,
  ocspRequestFor,
  parseOcspRequest,
  readOcspResponse,
  signOcspResponse,
} from './ocsp';
export {
  parseTimeStampRequest,
  signTimeStampResponse,
  timeStampRejection,
  timeStampRequest,
  TimeStampRequestError,
  timeStampTokenOf,
  verifyTimeStampToken,
} from './tsp';
