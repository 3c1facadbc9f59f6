/** The time-stamper the signer and the CSC door share, by how TSA_* configure it. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lambdaClient } from '@pipeline/adapters/aws';
import { FunctionTimeStamper, HttpTimeStamper } from '@pipeline/adapters/lambda';
import { createTimeStamper, tsaTrustAnchors } from '../time-stamping';

const pem = (body: string) => `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----`;
const lambda = lambdaClient({ region: 'eu-north-1', endpoints: { lambda: 'http://127.0.0.1:9' } } as never);

test("an external TSA's trust anchors are the PEM certificates of its file, comments between them left out", () => {
  const file = join(mkdtempSync(join(tmpdir(), 'tsa-')), 'anchors.pem');
  writeFileSync(file, `# root\n${pem('QUJD')}\nsome comment\n${pem('REVG')}\n`);
  const timeStamping = { kind: 'url', url: 'http://127.0.0.1:9/tsa', trustAnchorsFile: file } as const;
  expect(tsaTrustAnchors(timeStamping)).toEqual([pem('QUJD'), pem('REVG')]);
  expect(createTimeStamper(timeStamping, lambda)).toBeInstanceOf(HttpTimeStamper);
});

test("the service's TSA function: no trust anchors, the function's time-stamper", () => {
  const timeStamping = { kind: 'function', functionName: 'tsa' } as const;
  expect(tsaTrustAnchors(timeStamping)).toEqual([]);
  expect(createTimeStamper(timeStamping, lambda)).toBeInstanceOf(FunctionTimeStamper);
});
