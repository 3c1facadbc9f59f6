/**
 * The service's time-stamper as the functions that use it reach it (the signer for B-T and up, the CSC
 * door's signatures/timestamp): the TSA function, or an external TSA by URL with the trust anchors of
 * TSA_TRUST_ANCHORS_FILE.
 */
import { readFileSync } from 'node:fs';
import { lambdaClient } from '@pipeline/adapters/aws';
import { FunctionTimeStamper, HttpTimeStamper } from '@pipeline/adapters/lambda';
import type { PipelineConfig } from '@pipeline/config';

type TimeStamping = PipelineConfig['timeStamping'];

/** The PEM certificates of a file, each with its armour (a bundle may hold comments between them). */
function pemCertificates(path: string): string[] {
  return (
    readFileSync(path, 'utf8').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []
  );
}

/** The external TSA's trust anchors (PEM), none for the service's TSA function. */
export function tsaTrustAnchors(timeStamping: TimeStamping): string[] {
  return timeStamping.kind === 'url' ? pemCertificates(timeStamping.trustAnchorsFile) : [];
}

export function createTimeStamper(
  timeStamping: TimeStamping,
  lambda: ReturnType<typeof lambdaClient>,
  trustAnchorsPem: readonly string[] = tsaTrustAnchors(timeStamping),
): FunctionTimeStamper | HttpTimeStamper {
  return timeStamping.kind === 'function'
    ? new FunctionTimeStamper(lambda, timeStamping.functionName)
    : new HttpTimeStamper(timeStamping.url, trustAnchorsPem);
}
