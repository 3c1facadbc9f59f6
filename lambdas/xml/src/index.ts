export { C14N, NS } from './namespaces';
export { parseXml, serializeXml } from './parse';
export { escapeXml, xmlDateTime } from './text';
export { c14nAlgorithm, canonicalize } from './c14n';
export { SIGNATURE_METHODS } from './algorithms';
export { childrenNS, signXml, verifyXml, type XmlSigner } from './signature';
export {
  BadXadesTaskError,
  XmlAlgorithmNotSupportedError,
  XmlMalformedError,
  XmlSignatureInvalidError,
} from './errors';
export { updateXadesTask, type XadesTaskInput } from './xades';
