/**
 * PAdES for a PDF, on the e-service side: an incremental update that adds a signature field whose value
 * is a signature dictionary (SubFilter ETSI.CAdES.detached) with a /ByteRange over the whole file except
 * the /Contents hex string; the digest of those byte ranges goes to the signing service (format cms,
 * profile PAdES-B-B), and the CMS it returns is written into /Contents. The PDF structure is built with
 * @cantoo/pdf-lib (a maintained pdf-lib fork with incremental saves); the original bytes stay untouched,
 * so earlier signatures in the file stay valid.
 */
import { createHash } from 'node:crypto';
import {
  EncryptedPDFError,
  PDFArray,
  PDFDict,
  PDFDocument,
  PDFHexString,
  PDFName,
  PDFNumber,
  PDFString,
  type PDFRef,
} from '@cantoo/pdf-lib';

/** Room for the CMS in /Contents: an RSA-4096 container with its chain is about 4 kB. */
const DEFAULT_CONTENTS_BYTES = 12 * 1024;
const BYTE_RANGE_PLACEHOLDER = '/ByteRange [ 0 /********** /********** /********** ]';

/** The PDF cannot be signed as given (not a PDF, encrypted, malformed): nothing was sent to the service. */
export class PdfSignatureError extends Error {
  public override readonly name = 'PdfSignatureError';
  public constructor(
    public readonly code: 'NOT_A_PDF' | 'PDF_ENCRYPTED' | 'PDF_UNREADABLE' | 'CMS_TOO_LARGE',
    message: string,
  ) {
    super(message);
  }
}

export interface PreparedPdf {
  /** The PDF with the incremental update, /Contents still zeros. */
  readonly bytes: Buffer;
  /** [0, start of /Contents, end of /Contents, rest]: what the signature covers. */
  readonly byteRange: readonly [number, number, number, number];
  /** Digest of the byte ranges: the `digest` of the sign request. */
  digest(algorithm: 'sha256' | 'sha384' | 'sha512'): Buffer;
  /** The signed PDF: the CMS (DER) written into /Contents. */
  embed(cms: Buffer): Buffer;
}

/** PDF date string, D:YYYYMMDDHHmmSS+00'00' (UTC). */
function pdfDate(date: Date): string {
  const p = (n: number): string => String(n).padStart(2, '0');
  return `D:${date.getUTCFullYear()}${p(date.getUTCMonth() + 1)}${p(date.getUTCDate())}${p(date.getUTCHours())}${p(
    date.getUTCMinutes(),
  )}${p(date.getUTCSeconds())}+00'00'`;
}

type Snapshot = ReturnType<PDFDocument['takeSnapshot']>;

interface PrepareOptions {
  readonly signingTime: Date;
  readonly fieldName?: string;
  readonly contentsBytes?: number;
  /** A CAdES signature (default), or a document time-stamp (PAdES B-LTA: an RFC 3161 token). */
  readonly kind?: 'signature' | 'document-time-stamp';
}

/** The PDF as a document, or why it cannot be signed (not a PDF, encrypted, unreadable). */
async function loadSignablePdf(pdf: Buffer): Promise<PDFDocument> {
  if (!pdf.subarray(0, 1024).includes('%PDF-'))
    throw new PdfSignatureError('NOT_A_PDF', 'the file is not a PDF');
  let doc: PDFDocument;
  try {
    doc = await PDFDocument.load(pdf, { updateMetadata: false });
  } catch (err) {
    if (err instanceof EncryptedPDFError) {
      throw new PdfSignatureError('PDF_ENCRYPTED', 'the PDF is encrypted: decrypt it before signing');
    }
    throw new PdfSignatureError(
      'PDF_UNREADABLE',
      `the PDF cannot be read (${(err as Error)?.name ?? 'error'})`,
    );
  }
  if (doc.isEncrypted)
    throw new PdfSignatureError('PDF_ENCRYPTED', 'the PDF is encrypted: decrypt it before signing');
  return doc;
}

/** The signature dictionary, /Contents zeros and /ByteRange a placeholder written over once the file is saved. */
function registerSignatureDictionary(
  doc: PDFDocument,
  options: PrepareOptions,
  contentsBytes: number,
): PDFRef {
  const { context } = doc;
  const signature =
    options.kind === 'document-time-stamp'
      ? context.obj({
          Type: 'DocTimeStamp',
          Filter: 'Adobe.PPKLite',
          SubFilter: 'ETSI.RFC3161',
          ByteRange: PDFArray.withContext(context),
          Contents: PDFHexString.of('0'.repeat(contentsBytes * 2)),
        })
      : context.obj({
          Type: 'Sig',
          Filter: 'Adobe.PPKLite',
          SubFilter: 'ETSI.CAdES.detached',
          ByteRange: PDFArray.withContext(context),
          Contents: PDFHexString.of('0'.repeat(contentsBytes * 2)),
          // PAdES B-B: the signing time is here, not in the CMS.
          M: PDFString.of(pdfDate(options.signingTime)),
        });
  const byteRange = signature.get(PDFName.of('ByteRange')) as PDFArray;
  byteRange.push(PDFNumber.of(0));
  for (let i = 0; i < 3; i++) byteRange.push(PDFName.of('**********'));
  return context.register(signature);
}

/**
 * An invisible signature field on the first page whose value is the signature, in the page's /Annots and
 * the AcroForm's /Fields; every object changed is marked for the incremental save.
 */
function addSignatureField(
  doc: PDFDocument,
  snapshot: Snapshot,
  signatureRef: PDFRef,
  fieldName?: string,
): void {
  const { context, catalog } = doc;
  const page = doc.getPage(0);
  const existingFields = doc.getForm().getFields().length;
  const widget = context.obj({
    Type: 'Annot',
    Subtype: 'Widget',
    FT: 'Sig',
    Rect: [0, 0, 0, 0],
    // Print + Locked: an invisible signature whose field cannot be changed.
    F: 132,
    T: PDFString.of(fieldName ?? `Signature${existingFields + 1}`),
    V: signatureRef,
    P: page.ref,
  });
  const widgetRef = context.register(widget);

  const annots = page.node.lookup(PDFName.of('Annots'));
  if (annots instanceof PDFArray) {
    annots.push(widgetRef);
    markArray(snapshot, page.node.get(PDFName.of('Annots')), page.ref);
  } else {
    page.node.set(PDFName.of('Annots'), context.obj([widgetRef]));
    snapshot.markRefForSave(page.ref);
  }
  let acroForm = catalog.lookup(PDFName.of('AcroForm'));
  if (!(acroForm instanceof PDFDict)) {
    acroForm = context.obj({ Fields: [] });
    catalog.set(PDFName.of('AcroForm'), context.register(acroForm as PDFDict));
  }
  const form = acroForm as PDFDict;
  const fields = form.lookup(PDFName.of('Fields'));
  if (fields instanceof PDFArray) fields.push(widgetRef);
  else form.set(PDFName.of('Fields'), context.obj([widgetRef]));
  // SignaturesExist + AppendOnly: viewers must save further changes as incremental updates.
  form.set(PDFName.of('SigFlags'), PDFNumber.of(3));
  snapshot.markRefForSave(doc.context.trailerInfo.Root as PDFRef);
  const formRef = catalog.get(PDFName.of('AcroForm'));
  if (formRef && 'objectNumber' in formRef) snapshot.markRefForSave(formRef as PDFRef);
  const fieldsRef = form.get(PDFName.of('Fields'));
  if (fieldsRef && 'objectNumber' in fieldsRef) snapshot.markRefForSave(fieldsRef as PDFRef);
}

/**
 * In the saved file (the original then the increment): finds the placeholder and /Contents, both in the
 * increment, and writes the real /ByteRange over the placeholder. Returns where /Contents is.
 */
function writeByteRange(
  pdf: Buffer,
  bytes: Buffer,
  contentsBytes: number,
): { start: number; end: number; range: readonly [number, number, number, number] } {
  const placeholderAt = bytes.lastIndexOf(BYTE_RANGE_PLACEHOLDER);
  const contentsAt = bytes.indexOf(`<${'0'.repeat(contentsBytes * 2)}>`, placeholderAt > 0 ? 0 : pdf.length);
  if (placeholderAt < pdf.length || contentsAt < pdf.length) {
    throw new PdfSignatureError('PDF_UNREADABLE', 'the signature placeholder was not written as expected');
  }
  const start = contentsAt;
  const end = contentsAt + contentsBytes * 2 + 2;
  const range = [0, start, end, bytes.length - end] as const;
  const written = `/ByteRange [${range.join(' ')}]`;
  if (written.length > BYTE_RANGE_PLACEHOLDER.length) {
    throw new PdfSignatureError('PDF_UNREADABLE', 'the PDF is too large for the byte range placeholder');
  }
  bytes.write(written.padEnd(BYTE_RANGE_PLACEHOLDER.length, ' '), placeholderAt, 'latin1');
  return { start, end, range };
}

export async function preparePdfSignature(pdf: Buffer, options: PrepareOptions): Promise<PreparedPdf> {
  const doc = await loadSignablePdf(pdf);
  const snapshot = doc.takeSnapshot();
  const contentsBytes = options.contentsBytes ?? DEFAULT_CONTENTS_BYTES;
  const signatureRef = registerSignatureDictionary(doc, options, contentsBytes);
  addSignatureField(doc, snapshot, signatureRef, options.fieldName);

  const increment = Buffer.from(await doc.saveIncremental(snapshot, { useObjectStreams: false }));
  const bytes = Buffer.concat([pdf, increment]);
  const { start, end, range } = writeByteRange(pdf, bytes, contentsBytes);
  const covered = (): Buffer[] => [bytes.subarray(0, start), bytes.subarray(end)];
  return {
    bytes,
    byteRange: range,
    digest: (algorithm) => {
      const hash = createHash(algorithm);
      for (const part of covered()) hash.update(part);
      return hash.digest();
    },
    embed: (cms) => {
      const hex = cms.toString('hex');
      if (hex.length > contentsBytes * 2) {
        throw new PdfSignatureError(
          'CMS_TOO_LARGE',
          `the CMS (${cms.length} bytes) exceeds the reserved ${contentsBytes}`,
        );
      }
      const signed = Buffer.from(bytes);
      signed.write(hex, start + 1, 'latin1');
      return signed;
    },
  };
}

/** An indirect /Annots array is its own object: save it; a direct one lives in the page. */
function markArray(snapshot: Snapshot, value: unknown, pageRef: PDFRef): void {
  if (value && typeof value === 'object' && 'objectNumber' in value) snapshot.markRefForSave(value as PDFRef);
  else snapshot.markRefForSave(pageRef);
}
