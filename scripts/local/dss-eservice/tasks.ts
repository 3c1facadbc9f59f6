/**
 * An e-service's three sign tasks as ELN-0609 §4 has it prepare them (XAdES over an XML document, CAdES
 * over content, PAdES over a PDF; ECDSA P-256 with SHA-256), and the three signatures it assembles from
 * what the service returns (the updated bytes, the signature value, the certificate chain), for EU DSS,
 * xmlsec1 and openssl to judge. (The CMS is assembled with the service's DER writer; EU DSS judges it.)
 */
import { createHash } from 'node:crypto';
import { Attribute } from '@peculiar/asn1-cms';
import { AsnConvert } from '@peculiar/asn1-schema';
import { buildSignedData, derChildren } from '@pipeline/der';
import { preparePdfSignature, type PreparedPdf } from '../../client/src/pdf-signature';
import { minimalPdf } from '../verify/pdf-validator';

/** What the service returns for one task (SignTaskData, or a document result of the pipeline). */
export interface SignedTaskResult {
  readonly toBeSignedBytes: Buffer;
  readonly adesObject?: Buffer;
  readonly signature: Buffer;
}

/** The e-service's document: the XML its XAdES envelops, the content its CAdES signs. */
export const CONTENT = Buffer.from('<lease xmlns="urn:example:lease"><flat>12</flat></lease>');

/** The e-service's SignedInfo (exclusive canonical form) over CONTENT, for an ECDSA XAdES. */
export const SIGNED_INFO = Buffer.from(
  '<ds:SignedInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:CanonicalizationMethod Algorithm="http://www.w3.org/2001/10/xml-exc-c14n#"></ds:CanonicalizationMethod>' +
    '<ds:SignatureMethod Algorithm="http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256"></ds:SignatureMethod>' +
    '<ds:Reference URI=""><ds:Transforms><ds:Transform Algorithm="http://www.w3.org/2000/09/xmldsig#enveloped-signature"></ds:Transform>' +
    '<ds:Transform Algorithm="http://www.w3.org/2001/10/xml-exc-c14n#"></ds:Transform></ds:Transforms>' +
    `<ds:DigestMethod Algorithm="http://www.w3.org/2001/04/xmlenc#sha256"></ds:DigestMethod><ds:DigestValue>${createHash('sha256').update(CONTENT).digest('base64')}</ds:DigestValue></ds:Reference></ds:SignedInfo>`,
);

/** SignedAttributes as an e-service writes them: contentType id-data, messageDigest (SHA-256). */
export function signedAttributesOf(digest: Buffer): Buffer {
  return Buffer.concat([
    Buffer.from(
      '314b301806092a864886f70d010903310b06092a864886f70d010701302f06092a864886f70d01090431220420',
      'hex',
    ),
    digest,
  ]);
}

export const CMS_ATTRIBUTES = signedAttributesOf(createHash('sha256').update(CONTENT).digest());

/** A PDF prepared for a PAdES signature (its byte ranges' digest goes into the attributes). */
export async function preparedPdf(): Promise<{ readonly pdf: PreparedPdf; readonly attributes: Buffer }> {
  const pdf = await preparePdfSignature(minimalPdf('Lease of flat 12'), { signingTime: new Date() });
  return { pdf, attributes: signedAttributesOf(pdf.digest('sha256')) };
}

/** The XAdES the e-service assembles: its document with the signature enveloped. */
export function assembleXades(result: SignedTaskResult, signatureId: string, certificateDer: Buffer): Buffer {
  return Buffer.from(
    CONTENT.toString('utf8').replace(
      '</lease>',
      `<ds:Signature xmlns:ds="http://www.w3.org/2000/09/xmldsig#" Id="${signatureId}">${result.toBeSignedBytes.toString('utf8')}` +
        `<ds:SignatureValue>${result.signature.toString('base64')}</ds:SignatureValue>` +
        `<ds:KeyInfo><ds:X509Data><ds:X509Certificate>${certificateDer.toString('base64')}</ds:X509Certificate></ds:X509Data></ds:KeyInfo>` +
        `${result.adesObject?.toString('utf8') ?? ''}</ds:Signature></lease>`,
    ),
  );
}

/** A CMS SignedData around the returned attributes and signature (detached: CAdES, or PAdES's /Contents). */
export function assembleCms(result: SignedTaskResult, certificatesDer: readonly Buffer[]): Buffer {
  return buildSignedData({
    attributes: derChildren(result.toBeSignedBytes).map((c) => AsnConvert.parse(c, Attribute)),
    signature: result.signature,
    digestAlgorithm: 'SHA-256',
    signatureAlgorithm: 'ECDSA',
    certificatesDer: [...certificatesDer],
  });
}
