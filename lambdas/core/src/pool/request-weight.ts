/**
 * What one sign request weighs in admission (admission.ts), in units of a one-document request: a key is
 * one per request whatever it signs, but the signer's and the CA's time, the time-stamps and the
 * validation data grow with the documents and their level. Each document costs, in twentieths of a
 * unit, B-B 2, B-T 3 (a time-stamp), B-LT 4 (its validation data), B-LTA 5; a request weighs the
 * rounded-up sum, at least 1: one document of any level 1, 50 B-LT documents 10.
 */
import type { SignatureLevel } from '../shared/formats';

const DOCUMENT_COST_TWENTIETHS: Readonly<Record<SignatureLevel, number>> = {
  'B-B': 2,
  'B-T': 3,
  'B-LT': 4,
  'B-LTA': 5,
};

/** `levels`: each document's level (a single-digest request is one document); no level is B-B. */
export function requestWeight(levels: readonly (SignatureLevel | undefined)[]): number {
  const twentieths = levels.reduce((sum, level) => sum + DOCUMENT_COST_TWENTIETHS[level ?? 'B-B'], 0);
  return Math.max(1, Math.ceil(twentieths / 20));
}
