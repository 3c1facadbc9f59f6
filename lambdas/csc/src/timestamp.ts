import { digestAlgorithmOf, digestOf } from '@pipeline/core/csc';
import { json, type HttpEvent, type HttpResult } from '@pipeline/doors';
import { CscError } from './errors';
import { grantOfBearer, parseBody } from './request';
import type { CscDoorDeps } from './types';

/**
 * signatures/timestamp (CSC v2 11.12): the service's RFC 3161 TSA over the client's `hash` with its
 * `hashAlgorithmOID` (and its `nonce`, hex, when given), for a token of scope service or credential (read,
 * not used). Answers `{ timestamp }`, the DER TimeStampToken in base64.
 */
export async function timestamp(event: HttpEvent, deps: CscDoorDeps): Promise<HttpResult> {
  await grantOfBearer(event, deps, ['service', 'credential']);
  const body = parseBody(event);
  const algorithm = digestAlgorithmOf(body.hashAlgorithmOID);
  const hash = Buffer.from(digestOf(body.hash, algorithm, 'hash'), 'base64');
  let nonce: Buffer | undefined;
  if (body.nonce !== undefined) {
    if (typeof body.nonce !== 'string' || !/^(?:[0-9a-fA-F]{2}){1,32}$/.test(body.nonce)) {
      throw new CscError('invalid_request', 'Invalid parameter nonce: 1 to 32 bytes, hex');
    }
    nonce = Buffer.from(body.nonce, 'hex');
  }
  try {
    const token = await deps.timeStamper.timeStampHash(hash, algorithm, nonce);
    return json(200, { timestamp: token.toString('base64') });
  } catch (err) {
    deps.logger.warn('time-stamp for a CSC client failed', { errorName: (err as Error)?.name });
    throw new CscError('temporarily_unavailable', 'the time-stamping authority is unavailable');
  }
}
