/**
 * The API's admission rule by key supply and per-client share (pool/admission.ts), on counts: a request no
 * key can come for in time is refused before it is accepted, and one client cannot take a low pool's last
 * keys from the others.
 */
import { admitSignRequest, type AdmissionSettings, type OpenRequestCounts } from '../src';

const fallback: AdmissionSettings = { policy: 'fallback', onTheFly: 20, clientReserve: 10 };

function open(clients: Record<string, number>): OpenRequestCounts {
  const total = Object.values(clients).reduce((a, b) => a + b, 0);
  return { byType: { 'EC-P384': total }, byClient: { 'EC-P384': clients } };
}

const decide = (clientId: string, available: number, clients: Record<string, number>, settings = fallback) =>
  admitSignRequest({ keyType: 'EC-P384', clientId, available, open: open(clients) }, settings);

test('a plentiful pool accepts, even a client with many open requests', () => {
  expect(decide('a', 500, { a: 300 })).toEqual({ kind: 'accept' });
});

test('open requests at the capacity (pool + on the fly) are refused KEYS_UNAVAILABLE, whoever asks', () => {
  // capacity 30 + 20 = 50
  expect(decide('b', 30, { a: 40, c: 10 })).toMatchObject({ kind: 'refuse', code: 'KEYS_UNAVAILABLE' });
  expect(decide('b', 30, { a: 39, c: 10 })).toEqual({ kind: 'accept' });
});

test('one client never takes the reserve: alone it stops at capacity - reserve, and another client still gets in', () => {
  expect(decide('a', 30, { a: 39 })).toEqual({ kind: 'accept' });
  expect(decide('a', 30, { a: 40 })).toMatchObject({ kind: 'refuse', code: 'CLIENT_SHARE_EXCEEDED' });
  expect(decide('b', 30, { a: 40 })).toEqual({ kind: 'accept' });
});

test('in the reserve each client gets at most an equal share of the capacity', () => {
  // capacity 50, two clients: shares of 25.
  expect(decide('b', 30, { a: 30, b: 10 })).toEqual({ kind: 'accept' });
  expect(decide('a', 30, { a: 30, b: 10 })).toMatchObject({ code: 'CLIENT_SHARE_EXCEEDED' });
  expect(decide('a', 30, { a: 24, b: 20 })).toEqual({ kind: 'accept' });
  expect(decide('b', 30, { a: 20, b: 25 })).toMatchObject({ code: 'CLIENT_SHARE_EXCEEDED' });
});

test('an empty pool under fallback still serves one open request per client on the fly', () => {
  const tight: AdmissionSettings = { policy: 'fallback', onTheFly: 5, clientReserve: 10 };
  expect(decide('a', 0, {}, tight)).toEqual({ kind: 'accept' });
  expect(decide('a', 0, { a: 1 }, tight)).toMatchObject({ code: 'CLIENT_SHARE_EXCEEDED' });
  expect(decide('b', 0, { a: 1 }, tight)).toEqual({ kind: 'accept' });
});

test('under reject: no on-the-fly allowance, and an empty pool is POOL_EMPTY', () => {
  const reject: AdmissionSettings = { policy: 'reject', onTheFly: 20, clientReserve: 0 };
  expect(decide('a', 0, {}, reject)).toMatchObject({ kind: 'refuse', code: 'POOL_EMPTY' });
  expect(decide('a', 5, { a: 5 }, reject)).toMatchObject({ code: 'KEYS_UNAVAILABLE' });
  expect(decide('a', 5, { a: 4 }, reject)).toEqual({ kind: 'accept' });
});
