/**
 * The API's admission rule by key supply and per-client share (pool/admission.ts), on counts: a request no
 * key can come for in time is refused before it is accepted, and one client cannot take a low pool's last
 * keys from the others.
 */
import { admitSignRequest, requestWeight, type AdmissionSettings, type OpenRequestCounts } from '../src/pool';

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

test('open requests at the capacity (pool + on the fly) are refused KEYS_UNAVAILABLE to a client within its share', () => {
  // capacity 30 + 20 = 50
  expect(decide('b', 30, { a: 40, c: 10 })).toMatchObject({ kind: 'refuse', code: 'KEYS_UNAVAILABLE' });
  expect(decide('b', 30, { a: 39, c: 10 })).toEqual({ kind: 'accept' });
});

test('at the capacity a client over its share is told CLIENT_SHARE_EXCEEDED, the clients within theirs KEYS_UNAVAILABLE', () => {
  // capacity 6 + 6 = 12, reserve 3: a flooder holds its 9, another client took the reserve's 3.
  const small: AdmissionSettings = { policy: 'fallback', onTheFly: 6, clientReserve: 3 };
  const full = { flooder: 9, victim: 3 };
  expect(decide('flooder', 6, full, small)).toMatchObject({ kind: 'refuse', code: 'CLIENT_SHARE_EXCEEDED' });
  expect(decide('victim', 6, full, small)).toMatchObject({ kind: 'refuse', code: 'KEYS_UNAVAILABLE' });
  expect(decide('third', 6, full, small)).toMatchObject({ kind: 'refuse', code: 'KEYS_UNAVAILABLE' });
  // Over its equal share (ceil(12 / 2) = 6) though under capacity - reserve: the share still names it.
  expect(decide('a', 6, { a: 7, b: 5 }, small)).toMatchObject({ code: 'CLIENT_SHARE_EXCEEDED' });
  expect(decide('b', 6, { a: 7, b: 5 }, small)).toMatchObject({ code: 'KEYS_UNAVAILABLE' });
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

test('a request weighs its documents at their levels: one document 1, 50 B-LT documents 10', () => {
  const many = (n: number, level?: 'B-B' | 'B-T' | 'B-LT' | 'B-LTA') =>
    Array.from({ length: n }, () => level);
  expect(requestWeight([undefined])).toBe(1);
  expect(requestWeight(['B-LTA'])).toBe(1);
  expect(requestWeight(many(50, 'B-LT'))).toBe(10);
  expect(requestWeight(many(50, 'B-B'))).toBe(5);
  expect(requestWeight(many(50))).toBe(5);
  expect(requestWeight(many(50, 'B-T'))).toBe(8);
  expect(requestWeight(many(50, 'B-LTA'))).toBe(13);
  expect(requestWeight([...many(25, 'B-LT'), ...many(25, 'B-B')])).toBe(8);
  expect(requestWeight([])).toBe(1);
});

test('a heavy request takes room as its weight: refused where one more light request still fits', () => {
  // capacity 30 + 20 = 50, reserve 10.
  const weighed = (clientId: string, clients: Record<string, number>, weight: number) =>
    admitSignRequest({ keyType: 'EC-P384', clientId, available: 30, open: open(clients), weight }, fallback);
  expect(weighed('b', { a: 35, c: 5 }, 1)).toEqual({ kind: 'accept' });
  expect(weighed('b', { a: 35, c: 5 }, 10)).toEqual({ kind: 'accept' });
  expect(weighed('b', { a: 35, c: 6 }, 10)).toMatchObject({ kind: 'refuse', code: 'KEYS_UNAVAILABLE' });
  // One client alone stops at capacity - reserve (40) counted in weights.
  expect(weighed('a', { a: 30 }, 10)).toEqual({ kind: 'accept' });
  expect(weighed('a', { a: 31 }, 10)).toMatchObject({ code: 'CLIENT_SHARE_EXCEEDED' });
  expect(weighed('a', { a: 31 }, 1)).toEqual({ kind: 'accept' });
});

test('a request heavier than the unreserved capacity still passes an idle pool (its weight capped there)', () => {
  const small: AdmissionSettings = { policy: 'fallback', onTheFly: 4, clientReserve: 2 };
  const weighed = (clients: Record<string, number>) =>
    admitSignRequest(
      { keyType: 'EC-P384', clientId: 'a', available: 2, open: open(clients), weight: 13 },
      small,
    );
  expect(weighed({})).toEqual({ kind: 'accept' });
  expect(weighed({ a: 1 })).toMatchObject({ kind: 'refuse' });
});
