/** The API's documented id and the id the signer accepts from the queue are one pattern. */
import { randomUUID } from 'node:crypto';
import { REQUEST_ID_PATTERN } from '@pipeline/core/signing';
import openapi from '../openapi.json';

test('openapi.json Id is the core REQUEST_ID_PATTERN; client requestIds are the same UUIDs in any case', () => {
  expect(openapi.components.schemas.Id.pattern).toBe(REQUEST_ID_PATTERN.source);
  const clientId = new RegExp(openapi.components.schemas.SignRequestInput.properties.requestId.pattern);
  const id = randomUUID();
  expect(clientId.test(id.toUpperCase()) && REQUEST_ID_PATTERN.test(id)).toBe(true);
  expect(REQUEST_ID_PATTERN.test(id.toUpperCase())).toBe(false);
});
