/**
 * XML signatures over whole documents or identified elements (XMLDSig core), through xml-crypto with our
 * algorithm set (algorithms.ts). Verification trusts only the certificates the caller registered: KeyInfo is
 * never used to pick a key, the references must be the one the protocol expects (URI="" or "#<root ID>"),
 * the transforms are enveloped-signature and canonicalization only, and the caller reads the content from
 * the signed octets the verifier returns, never from the document it was handed (signature wrapping).
 */
import type { X509Certificate } from 'node:crypto';
import { SignedXml, type ErrorFirstCallback, type SignatureAlgorithm } from 'xml-crypto';
import {
  DIGEST_URIS,
  digestOfUri,
  hashAlgorithms,
  signatureMethod,
  verifyingAlgorithms,
  type XmlDigest,
} from './algorithms';
import { C14N, ENVELOPED_SIGNATURE, NS } from './namespaces';
import { c14nAlgorithm } from './c14n';
import { XmlAlgorithmNotSupportedError, XmlSignatureInvalidError } from './errors';
import { parseXml } from './parse';

/** A key that signs outside this process (the HSM, or a test key): it signs SignedInfo's canonical octets. */
export interface XmlSigner {
  /** The SignatureMethod URI (SIGNATURE_METHODS). */
  readonly signatureMethod: string;
  /** DER certificates for KeyInfo, signer first. */
  readonly certificates: readonly Buffer[];
  /** The SignatureValue octets (ECDSA as r‖s) over `octets`. */
  sign(octets: Buffer): Promise<Buffer>;
}

export interface SignOptions {
  /** The reference: '' for the whole document (with the enveloped transform), or an ID value. */
  readonly referenceId: string;
  /** Where the ds:Signature goes: relative to the element this XPath selects. */
  readonly location: { readonly xpath: string; readonly action: 'append' | 'prepend' | 'before' | 'after' };
  readonly digest?: XmlDigest;
}

/** Signs a document enveloped (exclusive C14N throughout) and returns the signed XML text. */
export async function signXml(xml: string, signer: XmlSigner, options: SignOptions): Promise<string> {
  signatureMethod(signer.signatureMethod);
  const signed = new SignedXml({
    // The key lives in the signer; xml-crypto only hands this value to the signer-backed algorithm below.
    privateKey: 'external-signer',
    signatureAlgorithm: signer.signatureMethod,
    canonicalizationAlgorithm: C14N.exclusive,
    getKeyInfoContent: (args) => keyInfoOf(signer.certificates, args?.prefix ?? ''),
  });
  signed.HashAlgorithms = hashAlgorithms();
  signed.SignatureAlgorithms = { [signer.signatureMethod]: signerAlgorithm(signer) };
  signed.addReference({
    xpath:
      options.referenceId === '' ? '/*' : `//*[@ID='${options.referenceId}' or @Id='${options.referenceId}']`,
    transforms: [ENVELOPED_SIGNATURE, C14N.exclusive],
    digestAlgorithm: DIGEST_URIS[options.digest ?? 'SHA-256'],
    isEmptyUri: options.referenceId === '',
  });
  return new Promise((resolve, reject) => {
    const location = { reference: options.location.xpath, action: options.location.action };
    signed.computeSignature(xml, { prefix: 'ds', location }, (err, result) => {
      if (err !== null || result === undefined) reject(err ?? new Error('no signature'));
      else resolve(result.getSignedXml());
    });
  });
}

export interface VerifyOptions {
  /** The certificates whose keys may have signed. */
  readonly trusted: readonly X509Certificate[];
  /** The ds:Signature element's place, chosen by the protocol (e.g. the last child of OptionalInputs). */
  readonly signature: (document: Document) => Element | undefined;
  /** The one reference the protocol expects: '' (the whole document) or the ID of the signed element. */
  readonly referenceId: string;
  /**
   * Other signatures in the document (a SAML Response's assertion's own) are refused unless allowed; they
   * are not verified here, and the caller still reads only the signed octets.
   */
  readonly otherSignatures?: 'refuse' | 'allow';
}

export interface VerifiedXml {
  /** The certificate whose key verified. */
  readonly certificate: X509Certificate;
  /** The signed content as the signature covers it (canonical octets): the only thing to read from. */
  readonly signedXml: string;
}

/** Verifies one enveloped signature of `xml` with one of the trusted certificates. */
export function verifyXml(xml: string, options: VerifyOptions): VerifiedXml {
  const document = parseXml(xml);
  const signature = options.signature(document);
  if (signature === undefined) throw new XmlSignatureInvalidError('the signature is missing or misplaced');
  if (
    options.otherSignatures !== 'allow' &&
    document.getElementsByTagNameNS(NS.ds, 'Signature').length !== 1
  ) {
    throw new XmlSignatureInvalidError('exactly one signature is allowed');
  }
  checkSignedInfo(signature, options.referenceId);
  for (const certificate of options.trusted) {
    const verifier = new SignedXml({ publicCert: certificate.toString(), getCertFromKeyInfo: () => null });
    verifier.HashAlgorithms = hashAlgorithms();
    verifier.SignatureAlgorithms = verifyingAlgorithms();
    verifier.loadSignature(signature);
    let valid: boolean;
    try {
      valid = verifier.checkSignature(xml);
    } catch {
      valid = false;
    }
    const references = valid ? verifier.getSignedReferences() : [];
    if (references.length === 1 && references[0] !== undefined) {
      return { certificate, signedXml: references[0] };
    }
  }
  throw new XmlSignatureInvalidError('the signature does not verify with a trusted certificate');
}

/** SignedInfo's shape: known algorithms, exactly the expected reference, harmless transforms only. */
function checkSignedInfo(signature: Element, referenceId: string): void {
  const signedInfo = childrenNS(signature, NS.ds, 'SignedInfo')[0];
  if (signedInfo === undefined) throw new XmlSignatureInvalidError('the signature has no SignedInfo');
  const [c14n] = childrenNS(signedInfo, NS.ds, 'CanonicalizationMethod');
  const [method] = childrenNS(signedInfo, NS.ds, 'SignatureMethod');
  c14nAlgorithm(c14n?.getAttribute('Algorithm') ?? '');
  signatureMethod(method?.getAttribute('Algorithm') ?? '');
  const references = childrenNS(signedInfo, NS.ds, 'Reference');
  const expectedUri = referenceId === '' ? '' : `#${referenceId}`;
  if (references.length !== 1 || references[0]?.getAttribute('URI') !== expectedUri) {
    throw new XmlSignatureInvalidError('the signature must reference exactly the signed element');
  }
  const reference = references[0];
  for (const transform of childrenNS(reference, NS.ds, 'Transforms').flatMap((t) =>
    childrenNS(t, NS.ds, 'Transform'),
  )) {
    const algorithm = transform.getAttribute('Algorithm') ?? '';
    if (algorithm !== ENVELOPED_SIGNATURE) c14nAlgorithm(algorithm);
  }
  const [digestMethod] = childrenNS(reference, NS.ds, 'DigestMethod');
  digestOfUri(digestMethod?.getAttribute('Algorithm') ?? '');
}

/** The element children of `parent` with a namespace and local name. */
export function childrenNS(parent: Element, namespace: string, localName: string): Element[] {
  const found: Element[] = [];
  for (let node = parent.firstChild; node !== null; node = node.nextSibling) {
    const element = node as Element;
    if (node.nodeType === 1 && element.namespaceURI === namespace && element.localName === localName) {
      found.push(element);
    }
  }
  return found;
}

function keyInfoOf(certificates: readonly Buffer[], prefix: string): string {
  const p = prefix === '' ? '' : `${prefix}:`;
  const certs = certificates.map((c) => `<${p}X509Certificate>${c.toString('base64')}</${p}X509Certificate>`);
  return `<${p}X509Data>${certs.join('')}</${p}X509Data>`;
}

/** An xml-crypto algorithm class whose signature comes from the (asynchronous) signer. */
function signerAlgorithm(signer: XmlSigner): new () => SignatureAlgorithm {
  return class {
    public getSignature(
      signedInfo: string | Buffer,
      _key: unknown,
      callback?: ErrorFirstCallback<string>,
    ): void {
      if (callback === undefined)
        throw new XmlAlgorithmNotSupportedError('the external signer is asynchronous');
      signer.sign(Buffer.from(signedInfo)).then(
        (value) => callback(null, value.toString('base64')),
        (err: unknown) => callback(err instanceof Error ? err : new Error(String(err))),
      );
    }
    public verifySignature(): boolean {
      throw new XmlAlgorithmNotSupportedError('the external signer only signs');
    }
    public getAlgorithmName(): string {
      return signer.signatureMethod;
    }
  } as unknown as new () => SignatureAlgorithm;
}
