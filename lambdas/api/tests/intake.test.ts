/**
 * The typed intake every door calls (submit, read): outcomes returned, refusals with their client code,
 * over in-memory ports; no HTTP event in or out.
 */
import { createHash, randomUUID } from 'node:crypto';
import { read, submit } from '../src';
import { memoryDeps } from './memory-deps';

const request = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  digest: createHash('sha256').update('x').digest('base64'),
  digestAlgorithm: 'SHA-256',
  keyType: 'EC-P256',
  requestId: randomUUID(),
  identityAssertion: `eyJhbGciOiJFUzI1NiJ9.${Buffer.from(randomUUID()).toString('base64url')}.c2ln`,
  ...over,
});

test('submit: a new request is accepted and fresh, a resend accepted and not fresh, as the client the door names', async () => {
  const deps = memoryDeps();
  const sent = request();
  const first = await submit(deps, { clientId: 'csc:portal', request: sent, waitSeconds: 0 });
  expect(first).toEqual({ kind: 'accepted', id: sent.requestId, status: 'received', fresh: true });
  expect(deps.records.get(sent.requestId as string)?.clientId).toBe('csc:portal');
  const again = await submit(deps, { clientId: 'csc:portal', request: sent, waitSeconds: 0 });
  expect(again).toMatchObject({ kind: 'accepted', fresh: false });
});

test('submit: refusals are returned with their client code, not thrown', async () => {
  const deps = memoryDeps();
  const invalid = await submit(deps, { clientId: 'a', request: request({ digest: 'x' }), waitSeconds: 0 });
  expect(invalid).toMatchObject({ kind: 'refused', error: { code: 'VALIDATION_FAILED', status: 400 } });
  const wait = await submit(deps, { clientId: 'a', request: request(), waitSeconds: Number.NaN });
  expect(wait).toMatchObject({ kind: 'refused', error: { message: 'wait must be an integer from 0 to 20' } });
  // A bad wait costs nothing: the request was not stored.
  expect(deps.records.size).toBe(0);
  const sent = request();
  await submit(deps, { clientId: 'a', request: sent, waitSeconds: 0 });
  const conflict = await submit(deps, {
    clientId: 'a',
    request: { ...sent, keyType: 'RSA-2048' },
    waitSeconds: 0,
  });
  expect(conflict).toMatchObject({ kind: 'refused', error: { code: 'REQUEST_ID_CONFLICT', status: 409 } });
});

test('submit: a failing backing service is SERVICE_UNAVAILABLE; an unexpected failure is thrown', async () => {
  const sdkFailure = Object.assign(new Error('down'), { $metadata: {} });
  const down = memoryDeps({
    queue: { enqueue: () => Promise.reject(sdkFailure), depth: async () => ({ visible: 0, inFlight: 0 }) },
  });
  const refused = await submit(down, { clientId: 'a', request: request(), waitSeconds: 0 });
  expect(refused).toMatchObject({ kind: 'refused', error: { code: 'SERVICE_UNAVAILABLE' } });
  const broken = memoryDeps({
    queue: {
      enqueue: () => Promise.reject(new TypeError('bug')),
      depth: async () => ({ visible: 0, inFlight: 0 }),
    },
  });
  await expect(submit(broken, { clientId: 'a', request: request(), waitSeconds: 0 })).rejects.toThrow('bug');
});

test('submit with a wait: the ended request as a result, its view typed', async () => {
  const deps = memoryDeps({
    queue: {
      // The "signer" ends the request as soon as it is queued.
      enqueue: async (id) => {
        const record = deps.records.get(id)!;
        deps.records.set(id, { ...record, status: 'signed', signature: 'c2ln' });
      },
      depth: async () => ({ visible: 0, inFlight: 0 }),
    },
  });
  const outcome = await submit(deps, { clientId: 'a', request: request(), waitSeconds: 2 });
  expect(outcome.kind).toBe('result');
  if (outcome.kind !== 'result') return;
  expect([outcome.request.status, outcome.request.signature]).toEqual(['signed', 'c2ln']);
});

test("read: the client's own request; another client's and a malformed id are refused", async () => {
  const deps = memoryDeps();
  const sent = request();
  await submit(deps, { clientId: 'a', request: sent, waitSeconds: 0 });
  const id = (sent.requestId as string).toUpperCase();
  expect(await read(deps, { clientId: 'a', id, waitSeconds: 0 })).toMatchObject({
    kind: 'result',
    request: { id: sent.requestId, status: 'received' },
  });
  expect(await read(deps, { clientId: 'b', id, waitSeconds: 0 })).toMatchObject({
    kind: 'refused',
    error: { code: 'NOT_FOUND' },
  });
  expect(await read(deps, { clientId: 'a', id: 'nope', waitSeconds: 0 })).toMatchObject({
    kind: 'refused',
    error: { code: 'VALIDATION_FAILED' },
  });
});

describe("submit: a DSS-Ext door's sign tasks", () => {
  const task = {
    sigType: 'CMS' as const,
    adesType: 'BES' as const,
    toBeSigned: Buffer.from([0x31, 0]).toString('base64'),
  };
  const tasks = (over: Record<string, unknown> = {}) => ({
    requestId: randomUUID(),
    keyType: 'EC-P256' as const,
    signatureAlgorithm: 'ECDSA' as const,
    digestAlgorithm: 'SHA-256' as const,
    tasks: [task, { ...task, sigType: 'XML' as const, signatureId: 'sig-1' }],
    evidence: 'dss-ext.PFNpZ25SZXF1ZXN0Lz4.PEFzc2VydGlvbi8-',
    ...over,
  });

  test('become dss-task documents bound by their digests, with the evidence as the identity assertion', async () => {
    const deps = memoryDeps();
    const sent = tasks();
    const outcome = await submit(deps, {
      clientId: 'dss:eservice',
      request: undefined,
      tasks: sent,
      waitSeconds: 0,
    });
    expect(outcome).toMatchObject({ kind: 'accepted', fresh: true });
    const record = deps.records.get(sent.requestId)!;
    expect(record.identityAssertion).toBe(sent.evidence);
    expect(record.documents?.map((d) => [d.format, d.task?.sigType])).toEqual([
      ['dss-task', 'CMS'],
      ['dss-task', 'XML'],
    ]);
    expect(record.documents?.[0]?.digest).not.toBe(record.documents?.[1]?.digest);
  });

  test.each([
    ['evidence that is not a DSS-Ext token', { evidence: 'eyJ.e30.c2ln' }],
    ['no tasks', { tasks: [] }],
    ['an unknown SigType', { tasks: [{ ...task, sigType: 'ASiC' }] }],
    ['bytes that are not base64', { tasks: [{ ...task, toBeSigned: '%%' }] }],
    ['a key type that does not fit the scheme', { keyType: 'RSA-2048' }],
  ])('refuse %s', async (_, over) => {
    const deps = memoryDeps();
    const outcome = await submit(deps, {
      clientId: 'dss:eservice',
      request: undefined,
      tasks: tasks(over) as never,
      waitSeconds: 0,
    });
    expect(outcome).toMatchObject({ kind: 'refused', error: { code: 'VALIDATION_FAILED' } });
    expect(deps.records.size).toBe(0);
  });
});
