/**
 * certifications over a log written through the AuditLog (memory store): a request id, assertion or public
 * key certified twice is named from the log alone; a superseded pair or chain is not, in whatever chains
 * and order its events sit.
 */
import { createHash } from 'node:crypto';
import { certifications, type AuditEvent, type CertificationReport } from '@pipeline/core/audit';
import { MAX_REPLACEMENTS } from '@pipeline/core/pki';
import { AuditLog, formatCertifications } from '../src';
import { MemoryAuditStore } from '../../test-support/memory-audit-store';

const hash = (s: string): string => createHash('sha256').update(s).digest('hex');

/** A certificate.issued event: the login `assertion`, the key `key`. */
const issued = (requestId: string, serial: string, assertion: string, key: string): AuditEvent => ({
  type: 'certificate.issued',
  requestId,
  serial,
  subjectHash: hash('subject'),
  assertionHash: hash(assertion),
  keySpkiHash: hash(key),
});
const revoked = (serial: string, reason: 'superseded' | 'keyCompromise', requestId: string): AuditEvent => ({
  type: 'certificate.revoked',
  serial,
  reason,
  requestId,
});

/** Each write: its chain, the entry time, its events. */
async function report(writes: ReadonlyArray<[number, number, AuditEvent[]]>): Promise<CertificationReport> {
  const store = new MemoryAuditStore();
  for (const [chain, at, events] of writes) {
    await new AuditLog(store, { chains: 3, chain, clock: () => at }).appendMany(events);
  }
  return certifications(await store.readAll());
}

const clean: Array<[number, number, AuditEvent[]]> = [
  [0, 1000, [issued('req-1', '0a01', 'login-1', 'key-1')]],
  [1, 1001, [issued('req-2', '0a02', 'login-2', 'key-2')]],
];

test('one certificate per request, login and key: nothing named', async () => {
  const r = await report(clean);
  expect(r).toEqual({ certificates: 2, superseded: [], repeated: [] });
  expect(formatCertifications(r)).toEqual([
    'certificates: 2 issued; each request, assertion and key certified once',
  ]);
});

test('one login replayed after its registers were deleted: the request id and the assertion certified twice', async () => {
  const r = await report([...clean, [2, 5000, [issued('req-1', '0b01', 'login-1', 'key-9')]]]);
  const both = [
    { requestId: 'req-1', serial: '0a01' },
    { requestId: 'req-1', serial: '0b01' },
  ];
  expect(r.repeated).toEqual([
    { by: 'request', value: 'req-1', issuances: both },
    { by: 'assertion', value: hash('login-1'), issuances: both },
  ]);
  expect(formatCertifications(r)).toEqual([
    'certificates: 3 issued',
    '  CERTIFIED 2 TIMES: request req-1: serials 0a01 (request req-1), 0b01 (request req-1)',
    `  CERTIFIED 2 TIMES: assertion ${hash('login-1')}: serials 0a01 (request req-1), 0b01 (request req-1)`,
  ]);
});

test('a superseded pair is named as such, not a failure, whatever the chains its events sit in', async () => {
  // The replacement in chain 0 and the revocation in chain 1 are read before the first issuance (chain 2).
  const r = await report([
    [2, 1000, [issued('req-1', '0a01', 'login-1', 'key-1')]],
    [1, 2000, [revoked('0a01', 'superseded', 'req-1')]],
    [0, 2001, [issued('req-1', '0b01', 'login-1', 'key-2')]],
  ]);
  expect(r).toEqual({
    certificates: 2,
    superseded: [{ requestId: 'req-1', revokedSerial: '0a01', serial: '0b01' }],
    repeated: [],
  });
  expect(formatCertifications(r)).toEqual([
    'certificates: 2 issued, 1 superseded pair; each request, assertion and key certified once',
    '  superseded: request req-1: serial 0a01 revoked (superseded), replaced by serial 0b01',
  ]);
  // The same key certified again in the pair is part of it too.
  const sameKey = await report([
    [0, 1000, [issued('req-1', '0a01', 'login-1', 'key-1'), revoked('0a01', 'superseded', 'req-1')]],
    [1, 1500, [issued('req-1', '0b01', 'login-1', 'key-1')]],
  ]);
  expect([sameKey.superseded.length, sameKey.repeated]).toEqual([1, []]);
});

test('a superseded chain (takeovers of takeovers) is its links, not a failure; a longer one than the CA allows is', async () => {
  const serial = (n: number): string => `0${n}01`;
  const chain = (issuances: number): Array<[number, number, AuditEvent[]]> =>
    Array.from({ length: issuances }, (_, n) => [
      n % 3,
      1000 * (n + 1),
      [
        issued('req-1', serial(n), 'login-1', `key-${n}`),
        ...(n + 1 < issuances ? [revoked(serial(n), 'superseded', 'req-1')] : []),
      ],
    ]);
  const three = await report(chain(3));
  expect(three).toEqual({
    certificates: 3,
    superseded: [
      { requestId: 'req-1', revokedSerial: '0001', serial: '0101' },
      { requestId: 'req-1', revokedSerial: '0101', serial: '0201' },
    ],
    repeated: [],
  });
  expect((await report(chain(1 + MAX_REPLACEMENTS))).repeated).toEqual([]);
  const tooLong = await report(chain(2 + MAX_REPLACEMENTS));
  expect([tooLong.superseded, tooLong.repeated.map((x) => x.by)]).toEqual([[], ['request', 'assertion']]);
});

test.each<[string, Array<[number, number, AuditEvent[]]>, string[]]>([
  [
    'the later certificate revoked superseded, the earlier one standing',
    [
      [0, 1000, [issued('req-1', '0a01', 'login-1', 'key-1')]],
      [1, 2000, [issued('req-1', '0b01', 'login-1', 'key-2'), revoked('0b01', 'superseded', 'req-1')]],
    ],
    ['request req-1', 'assertion'],
  ],
  [
    'the first revoked for another reason',
    [
      [0, 1000, [issued('req-1', '0a01', 'login-1', 'key-1'), revoked('0a01', 'keyCompromise', 'req-1')]],
      [1, 2000, [issued('req-1', '0b01', 'login-1', 'key-2')]],
    ],
    ['request req-1', 'assertion'],
  ],
  [
    'a superseded revocation that names another request',
    [
      [0, 1000, [issued('req-1', '0a01', 'login-1', 'key-1'), revoked('0a01', 'superseded', 'req-7')]],
      [1, 2000, [issued('req-1', '0b01', 'login-1', 'key-2')]],
    ],
    ['request req-1', 'assertion'],
  ],
  [
    'three certificates for one request, one of them superseded',
    [
      [0, 1000, [issued('req-1', '0a01', 'login-1', 'key-1'), revoked('0a01', 'superseded', 'req-1')]],
      [1, 2000, [issued('req-1', '0b01', 'login-1', 'key-2')]],
      [2, 3000, [issued('req-1', '0c01', 'login-1', 'key-3')]],
    ],
    ['request req-1', 'assertion'],
  ],
  [
    'a superseded pair whose second certificate names another login',
    [
      [0, 1000, [issued('req-1', '0a01', 'login-1', 'key-1'), revoked('0a01', 'superseded', 'req-1')]],
      [1, 2000, [issued('req-1', '0b01', 'login-2', 'key-2')]],
    ],
    ['request req-1'],
  ],
  [
    'one public key certified for two requests',
    [
      [0, 1000, [issued('req-1', '0a01', 'login-1', 'key-1')]],
      [1, 2000, [issued('req-2', '0a02', 'login-2', 'key-1'), revoked('0a01', 'superseded', 'req-1')]],
    ],
    ['key'],
  ],
])('a failure: %s', async (_, writes, named) => {
  const r = await report(writes);
  expect(r.superseded).toEqual([]);
  expect(r.repeated.map((x) => (x.by === 'request' ? `request ${x.value}` : x.by))).toEqual(named);
  expect(
    formatCertifications(r)
      .slice(1)
      .every((l) => l.startsWith('  CERTIFIED ')),
  ).toBe(true);
});
