/**
 * What the client gets: `raw`, a signature over its digest; `cms`, a detached CMS SignedData (AdES
 * baseline B-B) whose signed attributes the service builds after it certified the one-time key.
 */
export const SIGNATURE_FORMATS = ['raw', 'cms'] as const;
export type SignatureFormat = (typeof SIGNATURE_FORMATS)[number];

/** A document's format inside the service: the API's, or a DSS-Ext sign task (signing/sign-task.ts). */
export const DOCUMENT_FORMATS = [...SIGNATURE_FORMATS, 'dss-task'] as const;
export type DocumentFormat = (typeof DOCUMENT_FORMATS)[number];

/** CAdES for any content (with signingTime), PAdES for a PDF's byte ranges (the time is in the PDF). */
export const ADES_PROFILES = ['CAdES-B-B', 'PAdES-B-B'] as const;
export type AdesProfile = (typeof ADES_PROFILES)[number];

/**
 * AdES baseline levels (ETSI EN 319 122-1 / 319 142-1) of a `cms` result: B-B the signature alone; B-T
 * with a time-stamp of its signature value (proof it existed then); B-LT also the validation data a
 * relying party needs offline (chains, OCSP responses, CRLs); B-LTA for PAdES adds a document time-stamp,
 * which the client makes over the finished PDF (the service's part is that of B-LT).
 */
export const SIGNATURE_LEVELS = ['B-B', 'B-T', 'B-LT', 'B-LTA'] as const;
export type SignatureLevel = (typeof SIGNATURE_LEVELS)[number];
/** What a relying party needs to validate a signature years later, without a network. */
export const DEFAULT_SIGNATURE_LEVEL: SignatureLevel = 'B-LT';

/** Whether `level` is at least `floor`. */
export function levelAtLeast(level: SignatureLevel, floor: SignatureLevel): boolean {
  return SIGNATURE_LEVELS.indexOf(level) >= SIGNATURE_LEVELS.indexOf(floor);
}
