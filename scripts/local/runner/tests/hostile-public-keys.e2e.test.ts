/**
 * One public key, certified once, whatever its encoding: an attack on the running local pipeline by
 * someone who can write the key-pool table (a leaked role, a restored backup). The pool items the signer
 * consumed are put back under new key ids with each public key re-encoded (the P-256 point compressed,
 * 59 bytes instead of 91; the RSA key without the NULL algorithm parameters): the same keys, other bytes,
 * other hashes. Each copy would import, prove possession in its CSR and be certified again, for another
 * person, so that a `raw` signature made for one request also verifies under another request's
 * certificate. Every request must still be signed, no key certified twice, and `npm run audit -- verify`
 * must name each copy: the pool key id, the request it was claimed for, the request and serial its key
 * was certified for.
 */
import { ECDH, X509Certificate, createHash, createPublicKey, randomUUID } from 'node:crypto';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { AsnConvert } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier, SubjectPublicKeyInfo } from '@peculiar/asn1-x509';
import { id_rsaEncryption } from '@peculiar/asn1-rsa';
import { keySk } from '@pipeline/adapters/dynamodb';
import { keyUsage, type AuditEvent } from '@pipeline/core/audit';
import type { KeyType } from '@pipeline/core/shared';
import { TABLES, tableName } from '@pipeline/resources';
import { sampleRequest, verifySignedResult } from '../../client';
import {
  readAudit,
  runAll,
  scanAll,
  submit,
  waitForTerminal,
  type FaultPipeline,
  startFaultPipeline,
} from '../../faults/harness';
import { rootPem } from './support/relying-party';
import { auditCli } from './support/hostile-pipeline';

jest.setTimeout(420_000);

const TARGETS: Readonly<Record<'EC-P256' | 'RSA-2048', number>> = { 'EC-P256': 20, 'RSA-2048': 10 };
const FIRST_ROUND: Readonly<Record<'EC-P256' | 'RSA-2048', number>> = { 'EC-P256': 8, 'RSA-2048': 5 };

let fault: FaultPipeline;

beforeAll(async () => {
  fault = await startFaultPipeline({
    env: {
      POOL_TARGETS: Object.entries(TARGETS)
        .map(([type, n]) => `${type}=${n}`)
        .join(','),
      POOL_BUNDLE_SIZE: '5',
      LOCAL_VISIBILITY_TIMEOUT_SECONDS: '20',
      SIGN_ATTEMPT_LEASE_SECONDS: '30',
      // Discarded copies drain the pool: the last requests get keys generated on the fly.
      POOL_FALLBACK_MAX_IN_FLIGHT: '64',
      POOL_FALLBACK_WAIT_MS: '60000',
      AUDIT_CHECKPOINT_INTERVAL_SECONDS: '1',
    },
  });
  await fault.pipeline.runKeygen();
});

afterAll(async () => {
  await fault?.stop();
});

const sha256 = (data: Uint8Array): string => createHash('sha256').update(data).digest('hex');

/** The same public key in another encoding: the EC point compressed, RSA without NULL parameters. */
function reencoded(spki: Uint8Array): Buffer {
  const info = AsnConvert.parse(Buffer.from(spki), SubjectPublicKeyInfo);
  if (info.algorithm.algorithm === id_rsaEncryption) {
    info.algorithm = new AlgorithmIdentifier({ algorithm: id_rsaEncryption });
  } else {
    const point = ECDH.convertKey(
      Buffer.from(info.subjectPublicKey),
      'prime256v1',
      undefined,
      undefined,
      'compressed',
    ) as Buffer;
    info.subjectPublicKey = new Uint8Array(point).buffer;
  }
  const der = Buffer.from(AsnConvert.serialize(info));
  // Still the same key for OpenSSL (Node): only its bytes differ.
  const jwk = (d: Uint8Array) =>
    JSON.stringify(
      createPublicKey({ key: Buffer.from(d), format: 'der', type: 'spki' }).export({ format: 'jwk' }),
    );
  expect(jwk(der)).toBe(jwk(spki));
  expect(der.equals(Buffer.from(spki))).toBe(false);
  return der;
}

/** A certificate's key as a key (its JWK), whatever the encoding its SubjectPublicKeyInfo uses. */
const certifiedKey = (pem: string): string =>
  JSON.stringify(new X509Certificate(pem).publicKey.export({ format: 'jwk' }));

async function sign(keyType: KeyType, count: number) {
  const url = fault.pipeline.url;
  const apiKey = fault.pipeline.apiKey;
  const requests = await runAll(
    Array.from({ length: count }, (_, i) => i),
    6,
    (i) => sampleRequest(keyType, i),
  );
  const accepted = await runAll(requests, 6, (r) => submit(url, apiKey, r, Date.now() + 60_000));
  const ended = await waitForTerminal(
    url,
    apiKey,
    accepted.map((a) => a.id),
    Date.now() + 240_000,
  );
  return accepted.map((a) => ({ ...a, view: ended.get(a.id)! }));
}

test('consumed pool keys put back re-encoded under new ids: every request signed, no key certified twice, the verifier names each copy', async () => {
  const poolTable = tableName(TABLES.keyPool);
  const bundles = async () => (await scanAll(fault.doc, poolTable)).filter((i) => i.sk !== '#COUNT');
  const snapshot = await bundles();

  const first = [
    ...(await sign('EC-P256', FIRST_ROUND['EC-P256'])),
    ...(await sign('RSA-2048', FIRST_ROUND['RSA-2048'])),
  ];
  expect(first.map((r) => r.view.status)).toEqual(first.map(() => 'signed'));

  // The attacker puts every consumed bundle back under a new key, each key under a new id and in another
  // encoding of its public key.
  const remaining = new Set((await bundles()).map((b) => `${b.pk} ${b.sk}`));
  const consumed = snapshot.filter((b) => !remaining.has(`${b.pk} ${b.sk}`));
  expect(new Set(consumed.map((b) => b.keyType))).toEqual(new Set(['EC-P256', 'RSA-2048']));
  /** Copy key id -> the original key's id and the hash of its (canonical) public key. */
  const copies = new Map<string, { keyId: string; keyType: string; spkiHash: string; bytes: number }>();
  for (const bundle of consumed) {
    const keys = (bundle.keys as Array<Record<string, unknown>>).map((key) => {
      const copyId = randomUUID();
      const spki = key.publicKeySpki as Uint8Array;
      const copy = reencoded(spki);
      copies.set(copyId, {
        keyId: key.keyId as string,
        keyType: bundle.keyType as string,
        spkiHash: sha256(spki),
        bytes: copy.length,
      });
      return { ...key, keyId: copyId, publicKeySpki: copy };
    });
    await fault.doc.send(
      new PutCommand({
        TableName: poolTable,
        Item: { ...bundle, sk: keySk(Number(bundle.expiresAt), keys[0].keyId as string), keys },
      }),
    );
  }
  const sizes = new Set([...copies.values()].map((c) => `${c.keyType}:${c.bytes}`));
  expect(sizes).toEqual(new Set(['EC-P256:59', 'RSA-2048:292']));

  // More requests than the fresh keys left, in the table and held by the signers (the rest of the bundles
  // they claimed): every copy is claimed before the pool runs dry.
  const fresh = (await bundles()).flatMap((b) =>
    (b.keys as Array<Record<string, unknown>>)
      .filter((k) => !copies.has(k.keyId as string))
      .map(() => b.keyType as string),
  );
  const roundTwo = (keyType: 'EC-P256' | 'RSA-2048'): number => {
    const held = [...copies.values()].filter((c) => c.keyType === keyType).length - FIRST_ROUND[keyType];
    return fresh.filter((t) => t === keyType).length + held + 2;
  };
  const second = [
    ...(await sign('EC-P256', roundTwo('EC-P256'))),
    ...(await sign('RSA-2048', roundTwo('RSA-2048'))),
  ];
  // A signer may still hold part of a bundle of copies it claimed when the requests ran out: more
  // requests of that type until every copy was claimed, a few rounds at most.
  const extra: Awaited<ReturnType<typeof sign>> = [];
  for (let round = 0; round < 5; round++) {
    const discarded = new Set(
      (await readAudit(fault.doc)).events
        .filter(
          (e): e is Extract<AuditEvent, { type: 'pool.key-discarded' }> => e.type === 'pool.key-discarded',
        )
        .map((e) => e.keyId),
    );
    const missing = [...copies].filter(([id]) => !discarded.has(id)).map(([, c]) => c.keyType);
    if (missing.length === 0) break;
    for (const keyType of ['EC-P256', 'RSA-2048'] as const) {
      const count = missing.filter((t) => t === keyType).length;
      if (count > 0) extra.push(...(await sign(keyType, count + 2)));
    }
  }
  const all = [...first, ...second, ...extra];
  for (const r of all) {
    expect({ id: r.id, status: r.view.status, code: r.view.error?.code }).toEqual({
      id: r.id,
      status: 'signed',
      code: undefined,
    });
    expect(verifySignedResult(r.request, r.view, rootPem)).toEqual({ ok: true });
  }
  // Every certificate certifies a key of its own, compared as keys, not as bytes.
  const keys = all.map((r) => certifiedKey(r.view.certificate!));
  expect(all.length - new Set(keys).size).toBe(0);
  // ... and carries it in its canonical encoding.
  for (const r of all) {
    const der = new X509Certificate(r.view.certificate!).publicKey.export({ type: 'spki', format: 'der' });
    expect(der.length).toBe(r.request.body.keyType === 'EC-P256' ? 91 : 294);
  }

  // The audit log: each copy was claimed and discarded unused, under its key's own hash; the original key
  // was certified once, for its first request.
  const { events, report } = await readAudit(fault.doc);
  expect(report.intact).toBe(true);
  const discards = new Map(
    events
      .filter(
        (e): e is Extract<AuditEvent, { type: 'pool.key-discarded' }> => e.type === 'pool.key-discarded',
      )
      .filter((e) => copies.has(e.keyId))
      .map((e) => [e.keyId, e]),
  );
  expect([...discards.keys()].sort()).toEqual([...copies.keys()].sort());
  for (const [copyId, discard] of discards) {
    expect({ reason: discard.reason, keySpkiHash: discard.keySpkiHash }).toEqual({
      reason: 'public-key-not-canonical',
      keySpkiHash: copies.get(copyId)!.spkiHash,
    });
  }
  const issued = events.filter(
    (e): e is Extract<AuditEvent, { type: 'certificate.issued' }> => e.type === 'certificate.issued',
  );
  const certifiedFor = new Map(issued.map((e) => [e.keySpkiHash, e]));
  expect(issued.length - certifiedFor.size).toBe(0);
  expect(keyUsage(events).reused).toEqual([]);

  // `npm run audit -- verify` names every copy: its pool key id, the request that claimed it, and for a key
  // that was certified, the request and serial it was certified for.
  const verify = auditCli(fault.pipeline, 'verify');
  expect(verify.stdout).toMatch(/^intact: /m);
  const certifiedCopies = [...discards].filter(([copyId]) => certifiedFor.has(copies.get(copyId)!.spkiHash));
  expect(certifiedCopies.length).toBeGreaterThanOrEqual(FIRST_ROUND['EC-P256'] + FIRST_ROUND['RSA-2048']);
  for (const [copyId, discard] of discards) {
    const certified = certifiedFor.get(copies.get(copyId)!.spkiHash);
    const named = certified
      ? `, certified for request ${certified.requestId} (serial ${certified.serial})`
      : '';
    expect(verify.stdout).toContain(
      `refused: key ${discard.keySpkiHash!.slice(0, 16)}${named}, presented re-encoded (not its canonical ` +
        `encoding) stored as pool key ${copyId} for request ${discard.requestId}: PUBLIC_KEY_NOT_CANONICAL by the signer`,
    );
  }
  expect(verify.status).toBe(1);
  console.log(
    `re-encoded copies put back: ${copies.size} (${certifiedCopies.length} of certified keys); ` +
      `all discarded unused, ${all.length} requests signed with ${new Set(keys).size} distinct keys`,
  );
});
