export { C14N, ENVELOPED_SIGNATURE, NS } from './namespaces';
export { DEFAULT_MAX_XML_BYTES, parseXml, serializeXml, type ParseOptions } from './parse';
export { c14nAlgorithm, canonicalize, type C14nAlgorithm, type C14nOptions } from './c14n';
export {
  DIGEST_URIS,
  SIGNATURE_METHODS,
  digestOfUri,
  signatureMethod,
  xmlDigest,
  type XmlDigest,
} from './algorithms';
export {
  childrenNS,
  signXml,
  verifyXml,
  type SignOptions,
  type VerifiedXml,
  type VerifyOptions,
  type XmlSigner,
} from './signature';
export {
  BadXadesTaskError,
  XmlAlgorithmNotSupportedError,
  XmlMalformedError,
  XmlSignatureInvalidError,
} from './errors';
export {
  SIGNED_PROPERTIES_TYPE,
  updateXadesTask,
  type XadesTaskInput,
  type XadesTaskOutput,
} from './xades';
