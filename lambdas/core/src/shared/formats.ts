/**
 * What the client gets: `raw`, a signature over its digest; `cms`, a detached CMS SignedData (AdES
 * baseline B-B) whose signed attributes the service builds after it certified the one-time key.
 */
export const SIGNATURE_FORMATS = ['raw', 'cms'] as const;
export type SignatureFormat = (typeof SIGNATURE_FORMATS)[number];

/** CAdES for any content (with signingTime), PAdES for a PDF's byte ranges (the time is in the PDF). */
export const ADES_PROFILES = ['CAdES-B-B', 'PAdES-B-B'] as const;
export type AdesProfile = (typeof ADES_PROFILES)[number];
