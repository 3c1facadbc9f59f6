import { createPrivateKey, sign, X509Certificate } from 'node:crypto';
import type { XmlSigner } from '@pipeline/xml';

/**
 * The door's service key (DSSEXT_SERVICE_KEY: a PEM private key and its certificate chain, from Secrets
 * Manager or a file) as an XmlSigner: RSA with rsa-sha256, EC with ecdsa-sha256 (r‖s, XMLDSig 1.1).
 */
export function pemXmlSigner(text: string): XmlSigner {
  const keyPem =
    /-----BEGIN (?:RSA |EC )?PRIVATE KEY-----[\s\S]+?-----END (?:RSA |EC )?PRIVATE KEY-----/.exec(text)?.[0];
  const certificates = (
    text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []
  ).map((pem) => new X509Certificate(pem));
  if (keyPem === undefined || certificates.length === 0) {
    throw new Error('the service key must hold a PEM private key and its certificate');
  }
  const key = createPrivateKey(keyPem);
  if (!certificates[0]!.checkPrivateKey(key))
    throw new Error("the service key's certificate is not its key's");
  const ec = key.asymmetricKeyType === 'ec';
  return {
    signatureMethod: ec
      ? 'http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256'
      : 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
    certificates: certificates.map((c) => c.raw),
    sign: (octets) => Promise.resolve(sign('sha256', octets, ec ? { key, dsaEncoding: 'ieee-p1363' } : key)),
  };
}
