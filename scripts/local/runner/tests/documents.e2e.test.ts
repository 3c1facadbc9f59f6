/**
 * Several documents under one login, against the running local pipeline with real logins at the local
 * OpenID Provider:
 *
 * - a raw signature, a CAdES and a PAdES container at B-LT are signed under one assertion with one key
 *   and one certificate, the results in input order; each CMS verifies with `openssl cms -verify`, the raw
 *   signature with the certificate's key; the audit log names each document's signature and
 *   `npm run audit -- verify` still verifies; a resend of the same body answers the same;
 * - a manifest forged after the login (a document added, removed or reordered) is refused by the API
 *   (ASSERTION_BINDING_MISMATCH) and the login stays unused;
 * - the documents of a stored request changed after the API accepted it (as someone who can write the
 *   table would): the CA recomputes the manifest and refuses, no certificate and no signature leave the
 *   service, the request fails with the CA's code and the refusal is audited.
 */
import { X509Certificate, createHash, randomBytes, randomUUID, verify } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { assertionNonce, requestBindingOf, type ManifestDocument } from '@pipeline/core/identity';
import type { AuditEvent } from '@pipeline/core/audit';
import { TABLES, tableName } from '@pipeline/resources';
import { obtainIdToken } from '../../../client/src/oidc-login';
import { call, localIssuer } from '../../client';
import { TEST_CITIZENS } from '../../idp/citizens';
import { CLIENT_IDS } from '../../idp/clients';
import { LOCAL_DIR, ROOT } from '../../paths';
import { opensslCmsVerify } from '../../verify/openssl';
import { readAudit, startFaultPipeline, type FaultPipeline } from '../../faults/harness';

jest.setTimeout(300_000);

let fault: FaultPipeline;
let rootPem: string;

beforeAll(async () => {
  fault = await startFaultPipeline({
    env: {
      POOL_TARGETS: 'EC-P256=10',
      // No signer until the tampered records are in place (startConsumer below).
      LOCAL_CONSUMERS: '0',
      LOCAL_VISIBILITY_TIMEOUT_SECONDS: '10',
      SIGN_ATTEMPT_LEASE_SECONDS: '30',
    },
  });
  await fault.pipeline.runKeygen();
  rootPem = readFileSync(join(LOCAL_DIR, 'ca', 'root.pem'), 'utf8');
}, 180_000);

afterAll(async () => {
  await fault?.stop();
});

/** A document: its content (kept to verify the result) and how it is sent. */
interface Doc {
  readonly content: Buffer;
  readonly sent: Record<string, unknown>;
  readonly resolved: ManifestDocument;
}

function doc(format: 'raw' | 'cms', profile?: 'CAdES-B-B' | 'PAdES-B-B', name?: string): Doc {
  const content = randomBytes(200);
  const digest = createHash('sha256').update(content).digest('base64');
  const base = { digest, digestAlgorithm: 'SHA-256' as const, ...(name ? { name } : {}) };
  return {
    content,
    sent: { ...base, format, ...(profile ? { profile, level: 'B-LT' } : {}) },
    resolved: { ...base, format, ...(profile ? { profile } : {}) },
  };
}

/**
 * A body for `docs` and a real login at the local IdP whose nonce binds `bound` (default: the same
 * documents). Without a sign message: the approval of a composed message for the manifestHash is the
 * API's unit tests' (lambdas/api/tests/documents.test.ts) and the CA's (certificate-authority tests).
 */
async function login(docs: readonly Doc[], bound: readonly Doc[] = docs) {
  const requestId = randomUUID();
  const documents = bound.map((d) => d.resolved);
  const nonce = assertionNonce(
    requestBindingOf({
      id: requestId,
      keyType: 'EC-P256',
      signatureAlgorithm: 'ECDSA',
      digest: '',
      digestAlgorithm: 'SHA-256',
      documents,
    }),
  );
  const { idToken } = await obtainIdToken({
    issuer: localIssuer(),
    clientId: CLIENT_IDS.signingService,
    personalIdentityNumber: TEST_CITIZENS[0].personalIdentityNumber,
    nonce,
  });
  return {
    requestId,
    keyType: 'EC-P256',
    signatureAlgorithm: 'ECDSA',
    documents: docs.map((d) => d.sent),
    identityAssertion: idToken,
  };
}

interface DocumentView {
  index: number;
  name?: string;
  format: string;
  profile?: string;
  reachedLevel?: string;
  signature?: string;
  cms?: string;
  validationData?: { certificates: string[]; ocspResponses: string[]; crls: string[] };
}
interface View {
  id: string;
  status: string;
  certificate?: string;
  certificateSerial?: string;
  chain?: string[];
  signature?: string;
  cms?: string;
  documents?: DocumentView[];
  error?: { code: string };
  timings: { stageMs?: Record<string, number> };
}

const post = (body: unknown, wait = 0) =>
  call<View & { error?: { code: string } }>(
    `${fault.pipeline.url}/sign-requests${wait ? `?wait=${wait}` : ''}`,
    {
      apiKey: fault.pipeline.apiKey,
      body,
    },
  );

async function waitView(id: string): Promise<View> {
  for (;;) {
    const res = await call<View>(`${fault.pipeline.url}/sign-requests/${id}?wait=20`, {
      apiKey: fault.pipeline.apiKey,
    });
    if (res.status !== 200) throw new Error(`GET ${id}: ${res.status}`);
    if (res.body.status === 'signed' || res.body.status === 'failed') return res.body;
  }
}

/** Changes fields of a stored record, as a table write would. */
async function tamper(id: string, changes: Record<string, unknown>): Promise<void> {
  const names = Object.keys(changes);
  await fault.doc.send(
    new UpdateCommand({
      TableName: tableName(TABLES.requests),
      Key: { id },
      UpdateExpression: `SET ${names.map((_, i) => `#f${i} = :v${i}`).join(', ')}`,
      ExpressionAttributeNames: Object.fromEntries(names.map((n, i) => [`#f${i}`, n])),
      ExpressionAttributeValues: Object.fromEntries(names.map((n, i) => [`:v${i}`, changes[n]])),
    }),
  );
}

function auditCli(...args: string[]): { status: number | null; stdout: string } {
  return spawnSync(join(ROOT, 'node_modules', '.bin', 'tsx'), [join(ROOT, 'scripts', 'audit.ts'), ...args], {
    env: { ...process.env, ...fault.pipeline.env },
    encoding: 'utf8',
  });
}

const pdf = doc('cms', 'PAdES-B-B', 'application.pdf');
const cades = doc('cms', 'CAdES-B-B', 'notes.txt');
const raw = doc('raw');
const DOCS = [pdf, cades, raw];

describe('forged manifests', () => {
  const tampered = new Map<string, string>();
  let control: string;

  beforeAll(async () => {
    // Accepted by the API (real logins), then changed in the table before any signer runs.
    const extra = doc('raw', undefined, 'extra.bin');
    const changes: Array<[string, (stored: ManifestDocument[]) => ManifestDocument[]]> = [
      ['added', (s) => [...s, { ...extra.resolved }]],
      ['removed', (s) => s.slice(0, 2)],
      ['reordered', (s) => [s[1], s[0], s[2]]],
    ];
    for (const [what, change] of changes) {
      const body = await login(DOCS);
      const res = await post(body);
      expect(res.status).toBe(202);
      const stored = (await fault.requests.get(body.requestId))!.documents!.map((d) => ({ ...d }));
      await tamper(body.requestId, { documents: change(stored) });
      tampered.set(body.requestId, what);
    }
    const untouched = await login([raw, cades]);
    expect((await post(untouched)).status).toBe(202);
    control = untouched.requestId;
    fault.pipeline.startConsumer();
  });

  test('at the API: a document added, removed or reordered after the login is ASSERTION_BINDING_MISMATCH, and the login stays unused', async () => {
    const body = await login(DOCS);
    const extra = doc('raw');
    for (const documents of [
      [...DOCS, extra].map((d) => d.sent),
      DOCS.slice(0, 2).map((d) => d.sent),
      [cades, pdf, raw].map((d) => d.sent),
    ]) {
      const res = await post({ ...body, documents });
      expect([res.status, res.body.error?.code]).toEqual([400, 'ASSERTION_BINDING_MISMATCH']);
    }
    // The login was not spent on the refusals: the documents it was made for are signed with it.
    const res = await post(body, 20);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('signed');
  });

  test('at the CA: documents changed on the stored record after acceptance: failed with the CA code, no certificate, no signature, the refusal audited', async () => {
    const ended = new Map<string, View>();
    for (const id of [...tampered.keys(), control]) ended.set(id, await waitView(id));
    for (const id of tampered.keys()) {
      const view = ended.get(id)!;
      expect([tampered.get(id), view.status, view.error?.code]).toEqual([
        tampered.get(id),
        'failed',
        'ASSERTION_BINDING_MISMATCH',
      ]);
      expect([view.certificate, view.certificateSerial, view.chain]).toEqual([
        undefined,
        undefined,
        undefined,
      ]);
      for (const d of view.documents ?? []) expect([d.signature, d.cms]).toEqual([undefined, undefined]);
    }
    // The untouched request of the same kind is signed: the refusals are the tampering's.
    expect(ended.get(control)!.status).toBe('signed');
    const events: AuditEvent[] = (await readAudit(fault.doc)).events;
    for (const id of tampered.keys()) {
      const mine = events.filter((e) => 'requestId' in e && e.requestId === id);
      expect(
        mine.filter((e) => e.type === 'certificate.refused').map((e) => (e as { code: string }).code),
      ).toEqual(['ASSERTION_BINDING_MISMATCH']);
      expect(mine.filter((e) => e.type === 'certificate.issued' || e.type === 'signature.made')).toEqual([]);
    }
  });
});

describe('several documents signed under one login', () => {
  let body: Awaited<ReturnType<typeof login>>;
  let view: View;

  beforeAll(async () => {
    body = await login(DOCS);
    const res = await post(body, 20);
    expect(res.status).toBe(200);
    view = res.body;
  });

  test('one certificate for all, the results in input order, each CMS verified by openssl, the raw signature by its key', () => {
    expect(view.status).toBe('signed');
    expect([view.signature, view.cms]).toEqual([undefined, undefined]);
    const docs = view.documents!;
    expect(docs.map((d) => [d.index, d.name, d.format, d.profile, d.reachedLevel])).toEqual([
      [0, 'application.pdf', 'cms', 'PAdES-B-B', 'B-LT'],
      [1, 'notes.txt', 'cms', 'CAdES-B-B', 'B-LT'],
      [2, undefined, 'raw', undefined, undefined],
    ]);
    const leaf = new X509Certificate(view.certificate!);
    for (const [i, d] of DOCS.entries()) {
      const result = docs[i];
      if (d.resolved.format === 'raw') {
        expect(verify('sha256', d.content, leaf.publicKey, Buffer.from(result.signature!, 'base64'))).toBe(
          true,
        );
        continue;
      }
      const cms = Buffer.from(result.cms!, 'base64');
      const verified = opensslCmsVerify({ cms, content: d.content, rootPem });
      expect([i, verified.ok, verified.output.slice(0, 300)]).toEqual([i, true, expect.any(String)]);
      // Signed by the request's one certificate, and not valid for another document.
      expect(cms.includes(leaf.raw)).toBe(true);
      expect(opensslCmsVerify({ cms, content: DOCS[(i + 1) % 3].content, rootPem }).ok).toBe(false);
      expect(result.validationData?.ocspResponses.length).toBeGreaterThan(0);
    }
    expect(Object.keys(view.timings.stageMs ?? {})).toEqual(
      expect.arrayContaining(['sign', 'timestamp', 'validation']),
    );
  });

  test('a resend of the same body answers the same request and results', async () => {
    const again = await post(body, 20);
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(view.id);
    expect(again.body.documents).toEqual(view.documents);
    expect(again.body.certificateSerial).toBe(view.certificateSerial);
  });

  test("the audit log names each document's signature, and verify still verifies", async () => {
    const events = (await readAudit(fault.doc)).events.filter(
      (e) => e.type === 'signature.made' && e.requestId === view.id,
    ) as Array<{ documentIndex?: number; signatureHash: string }>;
    expect(events.map((e) => e.documentIndex)).toEqual([0, 1, 2]);
    const rawSignature = Buffer.from(view.documents![2].signature!, 'base64');
    expect(events[2].signatureHash).toBe(createHash('sha256').update(rawSignature).digest('hex'));
    const result = auditCli('verify');
    expect(result.stdout).toMatch(/^intact: /m);
    expect(result.status).toBe(0);
  });
});

test('fifty CAdES documents at B-LT with names of 120 characters: one body, one certificate, fifty results in order', async () => {
  const many = Array.from({ length: 50 }, (_, i) =>
    doc('cms', 'CAdES-B-B', `${String(i).padStart(2, '0')} ${'ö'.repeat(117)}`),
  );
  const body = await login(many);
  expect(Buffer.byteLength(JSON.stringify(body))).toBeGreaterThan(16 * 1024);
  const res = await post(body, 20);
  const view = res.status === 200 && res.body.status === 'signed' ? res.body : await waitView(body.requestId);
  expect([view.status, view.error?.code]).toEqual(['signed', undefined]);
  expect(view.documents!.map((d) => [d.index, d.name, d.reachedLevel])).toEqual(
    many.map((d, i) => [i, d.resolved.name, 'B-LT']),
  );
  const leaf = new X509Certificate(view.certificate!);
  for (const i of [0, 49]) {
    const cms = Buffer.from(view.documents![i].cms!, 'base64');
    expect(cms.includes(leaf.raw)).toBe(true);
    expect(opensslCmsVerify({ cms, content: many[i].content, rootPem }).ok).toBe(true);
  }
});
