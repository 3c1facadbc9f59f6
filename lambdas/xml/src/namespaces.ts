/** The XML namespaces and algorithm URIs every user of this package names. */
export const NS = {
  ds: 'http://www.w3.org/2000/09/xmldsig#',
  xades: 'http://uri.etsi.org/01903/v1.3.2#',
  xml: 'http://www.w3.org/XML/1998/namespace',
  xmlns: 'http://www.w3.org/2000/xmlns/',
} as const;

/** Canonicalization methods (XMLDSig core 6.5, exc-c14n). C14N 1.1 is not supported by xml-crypto. */
export const C14N = {
  inclusive: 'http://www.w3.org/TR/2001/REC-xml-c14n-20010315',
  inclusiveWithComments: 'http://www.w3.org/TR/2001/REC-xml-c14n-20010315#WithComments',
  exclusive: 'http://www.w3.org/2001/10/xml-exc-c14n#',
  exclusiveWithComments: 'http://www.w3.org/2001/10/xml-exc-c14n#WithComments',
} as const;

export const ENVELOPED_SIGNATURE = 'http://www.w3.org/2000/09/xmldsig#enveloped-signature';
