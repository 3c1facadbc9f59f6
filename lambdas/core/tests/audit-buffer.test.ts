/**
 * The attempt's audit buffer (one batch per append, the signature's receipt) and its one-time key (the
 * destroy, audited for a pool key, retried after a failure).
 */
import type { AuditEvent } from '../src/audit';
import { AuditBuffer } from '../src/signing/audit-buffer';
import { OneTimeKey } from '../src/signing/one-time-key';
import { harness, hsmError } from './fakes';

const claimed: AuditEvent = { type: 'pool.key-claimed', keyId: 'k1', requestId: 'r1' };

describe('AuditBuffer', () => {
  test('appends what is pending in one batch and keeps the receipt of the signature event', async () => {
    const h = harness();
    const buffer = new AuditBuffer(h.deps.audit);
    buffer.push(claimed);
    buffer.push({ type: 'signature.made', requestId: 'r1' } as unknown as AuditEvent);
    expect(buffer.pending).toBe(2);
    await buffer.append();
    expect(h.appended).toHaveLength(2);
    expect(buffer.pending).toBe(0);
    expect(buffer.receipt).toMatchObject({ leafIndex: 1 });
  });

  test('no receipt without a signature; nothing appended twice; a failed append still empties the buffer', async () => {
    const h = harness();
    const buffer = new AuditBuffer(h.deps.audit);
    buffer.push(claimed);
    await buffer.append();
    await buffer.append();
    expect(h.appended).toHaveLength(1);
    expect(buffer.receipt).toBeUndefined();
    h.deps.audit!.appendMany = async () => Promise.reject(new Error('log down'));
    buffer.push(claimed);
    await expect(buffer.append()).rejects.toThrow('log down');
    expect(buffer.pending).toBe(0);
  });

  test('without an audit log the events are dropped', async () => {
    const buffer = new AuditBuffer(undefined);
    buffer.push(claimed);
    await expect(buffer.append()).resolves.toBeUndefined();
    expect(buffer.pending).toBe(0);
  });
});

describe('OneTimeKey', () => {
  test('a pool key: destroyed once, and its destroy audited', async () => {
    const h = harness();
    const audit = new AuditBuffer(h.deps.audit);
    const key = new OneTimeKey(h.hsm, audit, 'r1');
    key.claimed('k1');
    key.hold((await h.hsm.generateKeyPair('EC-P256')).privateKey);
    await key.destroy();
    await key.destroy();
    expect(h.hsm.live.size).toBe(0);
    expect(h.hsm.calls.filter((c) => c === 'destroy')).toHaveLength(1);
    await audit.append();
    expect(h.appended).toEqual([{ type: 'pool.key-destroyed', keyId: 'k1', requestId: 'r1' }]);
    expect(key.pooled).toBe(true);
  });

  test('a failed destroy keeps the key, so the next destroy tries again; a generated key is not audited', async () => {
    const h = harness();
    const audit = new AuditBuffer(h.deps.audit);
    const key = new OneTimeKey(h.hsm, audit, 'r1');
    key.generated();
    key.hold((await h.hsm.generateKeyPair('EC-P256')).privateKey);
    h.hsm.failures.destroy = [hsmError('HsmError')];
    await expect(key.destroy()).rejects.toThrow();
    expect(() => key.handle).not.toThrow();
    await key.destroy();
    expect(h.hsm.live.size).toBe(0);
    expect(() => key.handle).toThrow('no live one-time key');
    expect(audit.pending).toBe(0);
    expect(key.pooled).toBe(false);
  });
});
