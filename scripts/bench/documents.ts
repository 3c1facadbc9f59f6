/**
 * `npm run bench -- documents [--n 1,5,20] [--requests R] [--concurrency C] [--level B-B] [--no-hsm-counts]`:
 * several documents under one login. One local pipeline, filled once, signs R requests of N `cms`
 * (CAdES) documents each for every N, C at a time, each with its own login at the local IdP made before
 * the measured phase. Per N, in the same run: requests and documents per second, and per document the
 * CPU ms of the functions' processes (runner, consumers, CA host: SoftHSM runs inside them) and of the
 * whole service (with the stand-ins), the DynamoDB item operations (the counting proxy in front of
 * DynamoDB Local) and the HSM operations by PKCS#11 function (OpenSC's pkcs11-spy between the
 * functions and SoftHSM, when installed; its logging is in the CPU figures, --no-hsm-counts leaves it
 * out). One key and one certificate serve the N documents: the unwrap and the CA's signature stay at
 * one per request while the signatures grow with N.
 */
import { rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { CLIENT_IDS } from '../local/idp/clients';
import { TEST_CITIZENS } from '../local/idp/citizens';
import { obtainIdToken } from '../client/src/oidc-login';
import {
  SigningClient,
  documentsRequest,
  documentsRequestNonce,
  type DocumentsBinding,
  type SignatureLevel,
} from '../client/src/signing-client';
import { startCountedPipeline } from './counted-pipeline';
import { Counter } from './e2e-run';
import { hsmCalls, hsmLogEnd, spyOnHsm } from './hsm-spy';
import { cpuBetween, cpuSnapshot } from './process-cpu';
import { finish, option, printTable, type Row } from './report';
import { round } from './stats';

const WARMUP_REQUESTS = 3;

async function runAll<T>(
  items: readonly T[],
  concurrency: number,
  each: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await each(items[next++]);
    }),
  );
}

export async function run(args: string[]): Promise<void> {
  const sizes = (option(args, 'n') ?? '1,5,20').split(',').map(Number);
  const requests = Number(option(args, 'requests') ?? '20');
  const concurrency = Number(option(args, 'concurrency') ?? '4');
  const level = (option(args, 'level') ?? 'B-B') as SignatureLevel;
  if (sizes.some((n) => !Number.isInteger(n) || n < 1 || n > 50) || !(requests >= 1) || !(concurrency >= 1)) {
    throw new Error(
      'usage: npm run bench -- documents [--n 1,5,20] [--requests R] [--concurrency C] [--level B-B|B-T|B-LT] [--no-hsm-counts]',
    );
  }
  const spyLog = args.includes('--no-hsm-counts') ? undefined : spyOnHsm('documents');
  const spying = spyLog !== undefined;
  const counter = await Counter.start();
  const keys = sizes.length * (requests + WARMUP_REQUESTS);
  const pipeline = await startCountedPipeline(counter, keys, {
    // The logins are made before a measured phase: their tokens must outlive it.
    LOCAL_IDP_ID_TOKEN_TTL_SECONDS: '3000',
    IDENTITY_MAX_AUTH_AGE_SECONDS: '3600',
  });
  const rows: Row[] = [];
  const figures: Record<string, unknown>[] = [];
  try {
    const issuer = pipeline.env.LOCAL_IDP_ISSUER;
    const client = new SigningClient({ apiUrl: pipeline.url, apiKey: pipeline.apiKey });
    /** A request of n documents with its login (made now, before anything is measured). */
    const prepare = async (n: number) => {
      const binding: DocumentsBinding = {
        requestId: SigningClient.newRequestId(),
        keyType: 'EC-P256',
        signatureAlgorithm: 'ECDSA',
        documents: Array.from({ length: n }, (_, i) => ({
          name: `document-${i + 1}.txt`,
          digest: randomBytes(32).toString('base64'),
          digestAlgorithm: 'SHA-256' as const,
          format: 'cms' as const,
          profile: 'CAdES-B-B' as const,
          level,
        })),
      };
      const { idToken } = await obtainIdToken({
        issuer,
        clientId: CLIENT_IDS.signingService,
        personalIdentityNumber: TEST_CITIZENS[0].personalIdentityNumber,
        nonce: documentsRequestNonce(binding),
      });
      return documentsRequest(binding, idToken);
    };
    const sign = async (body: Awaited<ReturnType<typeof prepare>>): Promise<void> => {
      const result = await client.submitAndWait(body, 120);
      if (result.status !== 'signed' || result.documents?.length !== body.documents.length) {
        throw new Error(`request ${body.requestId} ended ${result.status}: ${result.error?.code ?? ''}`);
      }
    };
    let spyOffset = 0;
    for (const n of sizes) {
      const warmup = await Promise.all(Array.from({ length: WARMUP_REQUESTS }, () => prepare(n)));
      await runAll(warmup, concurrency, sign);
      const bodies = [];
      for (let i = 0; i < requests; i++) bodies.push(await prepare(n));
      if (spyLog) spyOffset = hsmLogEnd(spyLog);
      const countsBefore = await counter.read();
      const cpuBefore = cpuSnapshot();
      const started = Date.now();
      await runAll(bodies, concurrency, sign);
      const seconds = (Date.now() - started) / 1000;
      const cpu = cpuBetween(cpuBefore, cpuSnapshot());
      const countsAfter = await counter.read();
      const hsm = spyLog ? hsmCalls(spyLog, spyOffset) : { counts: {}, end: 0 };
      spyOffset = hsm.end;
      const documents = n * requests;
      const sum = (match: (name: string) => boolean): number =>
        Object.entries(cpu)
          .filter(([name]) => match(name))
          .reduce((total, [, ms]) => total + ms, 0);
      const functionsMs = sum((name) => /runner|consumer|CA host/.test(name));
      const serviceMs = sum((name) => !/proxy|IdP|load generator/.test(name));
      const tableItems = countsAfter.tableItemOps - countsBefore.tableItemOps;
      // Function invocations per request, by function (the local Lambda Invoke endpoint, counted).
      const invocations = Object.fromEntries(
        Object.entries(countsAfter.invocations)
          .map(([fn, count]) => [
            fn.replace(/^.*-/, ''),
            (count - (countsBefore.invocations[fn] ?? 0)) / requests,
          ])
          .filter(([, perRequest]) => (perRequest as number) > 0),
      ) as Record<string, number>;
      const hsmPerRequest = Object.fromEntries(
        Object.entries(hsm.counts).map(([fn, count]) => [fn, round(count / requests, 2)]),
      );
      const row: Row = {
        'documents/request': n,
        requests,
        'requests/s': round(requests / seconds, 2),
        'documents/s': round(documents / seconds, 1),
        'functions CPU ms/doc': round(functionsMs / documents, 1),
        'all-in CPU ms/doc': round(serviceMs / documents, 1),
        'table items/doc': round(tableItems / documents, 2),
        'table items/request': round(tableItems / requests, 1),
        'invocations/request': Object.entries(invocations)
          .map(([fn, perRequest]) => `${fn} ${round(perRequest, 2)}`)
          .join(', '),
        ...(spying
          ? Object.fromEntries(
              Object.entries(hsmPerRequest).map(([fn, perRequest]) => [`${fn.slice(2)}/request`, perRequest]),
            )
          : {}),
      };
      rows.push(row);
      figures.push({
        ...row,
        cpuMsByProcess: cpu,
        hsmCallsPerRequest: hsmPerRequest,
        seconds: round(seconds, 2),
      });
      console.log(`N=${n}: ${requests} requests in ${round(seconds, 1)} s`);
    }
  } finally {
    await pipeline.stop();
    counter.stop();
    if (spyLog) rmSync(spyLog, { force: true });
  }
  printTable(
    `several documents under one login: EC-P256, cms CAdES-B-B at ${level}, ${concurrency} requests at a time`,
    rows,
  );
  finish('documents', {
    level,
    concurrency,
    hsmCounts: spying ? 'pkcs11-spy (its logging is in the CPU figures)' : 'none',
    results: figures,
  });
}
