/**
 * Tampering with stored pool keys at scale while a batch of requests runs: bytes flipped in wrapped
 * private keys, public keys swapped between items (what an attacker with write access to the table could
 * do). No certificate may ever be issued for a key the signer did not hold: every certificate's public
 * key verifies the signature its request returned, and none is the public key of a tampered item. The
 * requests carry on with other keys, and the audit log records each discard with its reason.
 */
import { X509Certificate } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { shuffle } from '@pipeline/core/pool';
import { TABLES, tableName } from '@pipeline/resources';
import { sampleRequest, sampleRequests, type SampleRequest } from '../../client';
import {
  expectAllEnded,
  keysUsedTwice,
  readAudit,
  runAll,
  seededRandom,
  scanAll,
  scanCertificates,
  sleep,
  startFaultPipeline,
  stopConsumersAndCountSessionObjects,
  submit,
  tally,
  waitForTerminal,
  type FaultPipeline,
} from '../harness';

jest.setTimeout(300_000);

const POOL = 150;
const REQUESTS = 90;
const FLIPPED = 10;
const SWAPPED_PAIRS = 5;
/** Keys per pool item. */
const BUNDLE = 5;
/** Codes a request may end with when it met more unusable keys in a row than it may discard (3). */
const KEY_UNUSABLE = new Set(['KEY_UNWRAP_FAILED', 'KEY_PUBLIC_MISMATCH']);
let fault: FaultPipeline;

beforeAll(async () => {
  fault = await startFaultPipeline({
    env: {
      POOL_TARGETS: `EC-P256=${POOL}`,
      POOL_BUNDLE_SIZE: String(BUNDLE),
      LOCAL_CONSUMERS: '2',
      LOCAL_POLLER_CONCURRENCY: '2',
      // Nothing is killed here: leases long enough that a slow attempt on a loaded machine is never
      // taken over (its work, and the keys it used, would be thrown away), and redeliveries outlast them.
      LOCAL_VISIBILITY_TIMEOUT_SECONDS: '10',
      SIGN_ATTEMPT_LEASE_SECONDS: '30',
    },
  });
  await fault.pipeline.runKeygen();
});

afterAll(async () => {
  await fault?.stop();
});

/** One stored key: its bundle item's coordinates and its place in the bundle's `keys` list. */
interface PoolItem {
  pk: string;
  sk: string;
  index: number;
  keyId: string;
  wrappedKey: Uint8Array;
  publicKeySpki: Uint8Array;
}

/** Every key still stored, bundle by bundle. */
async function storedKeys(doc: FaultPipeline['doc'], table: string): Promise<PoolItem[]> {
  const bundles = (await scanAll(doc, table)).filter((i) => Array.isArray(i.keys));
  return bundles.flatMap((bundle) =>
    (bundle.keys as Array<Omit<PoolItem, 'pk' | 'sk' | 'index'>>).map((key, index) => ({
      pk: String(bundle.pk),
      sk: String(bundle.sk),
      index,
      keyId: key.keyId,
      wrappedKey: key.wrappedKey,
      publicKeySpki: key.publicKeySpki,
    })),
  );
}

type Tampering = 'flipped' | 'swapped';

test('flipped wrapped keys and swapped public keys: never certified, discarded and audited, requests carry on', async () => {
  const { pipeline, doc } = fault;
  // Which keys are tampered with, and how, is seeded; which of them a signer meets first is not.
  const random = seededRandom();
  console.log(`pool tampering: FAULTS_SEED=${random.seed}`);
  const poolTable = tableName(TABLES.keyPool);
  const items = await storedKeys(doc, poolTable);
  expect(items.length).toBe(POOL);
  const realSpki = new Map(items.map((i) => [i.keyId, Buffer.from(i.publicKeySpki).toString('base64')]));

  const requests: SampleRequest[] = await sampleRequests(REQUESTS, (i) => sampleRequest('EC-P256', i));
  const submitting = runAll(requests, 4, async (request) => {
    const s = await submit(pipeline.url, pipeline.apiKey, request, Date.now() + 120_000);
    await sleep(150);
    return s;
  });

  // Tamper while the requests run; an item a signer claims first (deleted) fails the condition and is
  // simply not tampered with.
  await sleep(500);
  // Victims among the keys claimed early (claims take each shard's oldest bundles first), past the first
  // bundle per shard that is likely already claimed: most tampered keys then meet a signer in this run.
  const shards = [...new Set(items.map((i) => i.pk))].map((pk) =>
    items.filter((i) => i.pk === pk).sort((a, b) => a.sk.localeCompare(b.sk) || a.index - b.index),
  );
  const claimOrder = shards.flatMap((shard) => shard.slice(BUNDLE, Math.floor(shard.length / 2)));
  const victims = shuffle(claimOrder, random).slice(0, FLIPPED + 2 * SWAPPED_PAIRS);
  const tampered = new Map<string, Tampering>();
  const update = async (item: PoolItem, values: Partial<PoolItem>, kind: Tampering): Promise<void> => {
    try {
      await doc.send(
        new UpdateCommand({
          TableName: poolTable,
          Key: { pk: item.pk, sk: item.sk },
          UpdateExpression: `SET #keys[${item.index}].wrappedKey = :w, #keys[${item.index}].publicKeySpki = :p`,
          ExpressionAttributeNames: { '#keys': 'keys' },
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: {
            ':w': values.wrappedKey ?? item.wrappedKey,
            ':p': values.publicKeySpki ?? item.publicKeySpki,
          },
        }),
      );
      tampered.set(item.keyId, kind);
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
    }
  };
  await Promise.all(
    victims.slice(0, FLIPPED).map((item) => {
      const wrappedKey = Buffer.from(item.wrappedKey);
      wrappedKey[Math.floor(random() * wrappedKey.length)] ^= 1 << Math.floor(random() * 8);
      return update(item, { wrappedKey }, 'flipped');
    }),
  );
  // A pair's items keep their own wrapped private keys but carry each other's public keys. A pair where
  // only one update lands still leaves that one item with a public key that is not its own.
  const pairs = victims.slice(FLIPPED);
  await Promise.all(
    pairs.map((item, i) => {
      const partner = pairs[i % 2 === 0 ? i + 1 : i - 1];
      return update(item, { publicKeySpki: partner.publicKeySpki }, 'swapped');
    }),
  );
  expect(tampered.size).toBeGreaterThanOrEqual((FLIPPED + 2 * SWAPPED_PAIRS) / 2);

  const submitted = await submitting;
  const ids = submitted.map((s) => s.id);
  const views = await waitForTerminal(pipeline.url, pipeline.apiKey, ids, Date.now() + 120_000);
  // Every request ended with a reason, and every returned signature verifies with its certificate's key
  // (and the chain with the root).
  const signed = await expectAllEnded(pipeline, submitted, views);

  // Requests carry on with other keys; one only fails if it met more unusable keys in a row than allowed.
  const failed = ids.map((id) => views.get(id)!).filter((v) => v.status === 'failed');
  expect(failed.filter((v) => !KEY_UNUSABLE.has(v.error?.code ?? ''))).toEqual([]);
  expect(failed.length).toBeLessThanOrEqual(2);

  // No certificate the CA ever issued (also ones no client saw) is for a tampered item's public key:
  // a flipped item's private key cannot be unwrapped, a swapped item's stored key is someone else's.
  const tamperedSpkis = new Set([...tampered.keys()].map((id) => realSpki.get(id)!));
  const certificates = await scanCertificates(doc);
  const certifiedSpkis = certificates.byRequest.map((c) =>
    new X509Certificate(c.certificatePem!).publicKey
      .export({ type: 'spki', format: 'der' })
      .toString('base64'),
  );
  expect(certificates.byRequest.length).toBeGreaterThanOrEqual(signed.length);
  expect(certifiedSpkis.filter((spki) => tamperedSpkis.has(spki))).toEqual([]);

  // Discards: only tampered keys, each with the reason that matches its tampering, in the audit log.
  const audit = await readAudit(doc);
  expect(audit.report.issues).toEqual([]);
  expect(audit.report.intact).toBe(true);
  expect(keysUsedTwice(audit.events)).toEqual({});
  const discarded = new Map(
    audit.events.flatMap((e) => (e.type === 'pool.key-discarded' ? [[e.keyId, e.reason] as const] : [])),
  );
  const expectedReason: Record<Tampering, string> = {
    flipped: 'unwrap-failed',
    swapped: 'public-key-mismatch',
  };
  const wrongDiscards = [...discarded].filter(([id, reason]) => expectedReason[tampered.get(id)!] !== reason);
  expect(wrongDiscards).toEqual([]);
  // Every tampered key that left the pool was discarded, except those a consumer still held (the rest
  // of its last bundle and its prefetched key, lost when it stops) or that a request met after its last
  // allowed discard.
  const left = new Set((await storedKeys(doc, poolTable)).map((i) => i.keyId));
  const claimedTampered = [...tampered.keys()].filter((id) => !left.has(id));
  const undiscarded = claimedTampered.filter((id) => !discarded.has(id));
  expect(undiscarded.length).toBeLessThanOrEqual(2 * BUNDLE + failed.length);
  const kinds = tally([...discarded.values()]);
  expect(kinds['unwrap-failed']).toBeGreaterThanOrEqual(1);
  expect(kinds['public-key-mismatch']).toBeGreaterThanOrEqual(1);

  // Nothing of the discarded keys stays in the HSM.
  const sessionObjects = await stopConsumersAndCountSessionObjects(fault);
  expect(sessionObjects.length).toBe(2);
  expect(sessionObjects.every((n) => n === 0)).toBe(true);

  if (process.env.FAULTS_VERBOSE) {
    console.log(
      `tampered ${JSON.stringify(tally([...tampered.values()]))}; claimed ${claimedTampered.length}; ` +
        `discarded ${JSON.stringify(kinds)}; signed ${signed.length}, failed ${failed.length}`,
    );
  }
});
