/**
 * Canonical JSON: the byte string hashed for entries and signed for checkpoints.
 *
 * Rules (so any verifier, in any language, re-derives the same bytes):
 *   - objects: keys sorted by UTF-16 code unit order (JavaScript's default sort), no whitespace;
 *   - arrays: in order; strings: JSON.stringify escaping; booleans and null as in JSON;
 *   - numbers: safe integers only (no floats, NaN, -0 or exponents: their text forms vary between encoders);
 *   - undefined object members are left out; undefined anywhere else, functions, Buffers, Dates, ... are
 *     rejected: callers convert binary data to hex first.
 * The result is UTF-8 encoded for hashing.
 */
import { AuditEncodingError } from './errors';

export type CanonicalValue =
  | string
  | number
  | boolean
  | null
  | readonly CanonicalValue[]
  | { readonly [key: string]: CanonicalValue | undefined };

export function canonicalJson(value: CanonicalValue): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isSafeInteger(value) || Object.is(value, -0)) {
        throw new AuditEncodingError('canonical JSON accepts safe integers only');
      }
      return String(value);
    case 'object':
      if (Array.isArray(value)) return `[${value.map((v: CanonicalValue) => canonicalJson(v)).join(',')}]`;
      if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) {
        throw new AuditEncodingError('canonical JSON accepts plain objects only');
      }
      return `{${Object.keys(value)
        .sort()
        .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
        .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, CanonicalValue>)[k])}`)
        .join(',')}}`;
    default:
      throw new AuditEncodingError(`canonical JSON cannot encode a ${typeof value}`);
  }
}
