import { bodyBytes, headerOf, type HttpEvent } from '@pipeline/doors';
import { DssDoorPageError } from './errors';

/** Largest form accepted: a SignRequest of many tasks, base64 (API Gateway's payload limit is 10 MB). */
export const MAX_FORM_BYTES = 1024 * 1024;

/** The posted form (application/x-www-form-urlencoded). */
export function formOf(event: HttpEvent): URLSearchParams {
  const type = (headerOf(event, 'content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw new DssDoorPageError(400, 'the request must be a posted form (application/x-www-form-urlencoded)');
  }
  const body = bodyBytes(event);
  if (body.length > MAX_FORM_BYTES) throw new DssDoorPageError(400, 'the form is too large');
  return new URLSearchParams(body.toString('utf8'));
}
