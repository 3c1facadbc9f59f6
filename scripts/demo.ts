/**
 * `npm run demo` (against a running `npm start`): a handful of requests of every key type and scheme,
 * each result checked with the openssl command line (signature over the digest, chain to the root).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { KEY_TYPES, signatureAlgorithmsFor } from '@pipeline/core/shared';
import { opensslCmsVerify, opensslVerifyChain, opensslVerifyDigest } from './local/verify/openssl';
import { loadApiClients } from './local/runner/api-keys';
import { call, sampleRequest, type SignRequestView } from './local/client';
import { LOCAL_DIR } from './local/paths';
import { readRunnerInfo } from './local/runner-info';
import { printTable, type Row } from './bench/report';

async function main(): Promise<void> {
  const url = process.env.API_URL ?? readRunnerInfo()?.url ?? 'http://127.0.0.1:8080/v1';
  const apiKey = process.env.LOCAL_API_KEY ?? loadApiClients()[0].apiKey;
  const rootPem = readFileSync(join(LOCAL_DIR, 'ca', 'root.pem'), 'utf8');
  const health = await call(`${url}/health`).catch(() => undefined);
  if (health?.status === 503 && health.body.status === 'starting') {
    console.error(`the pipeline at ${url} is still starting: run this once \`npm start\` printed its banner`);
    process.exit(1);
  }
  if (!health || health.status !== 200) {
    console.error(`no pipeline answers at ${url}: start it with \`npm start\` first`);
    process.exit(1);
  }
  const rows: Row[] = [];
  let failures = 0;
  let i = 0;
  for (const keyType of KEY_TYPES) {
    for (const scheme of signatureAlgorithmsFor(keyType)) {
      for (const digestAlgorithm of ['SHA-256', 'SHA-384'] as const) {
        const request = await sampleRequest(keyType, i++, { digestAlgorithm, signatureAlgorithm: scheme });
        const started = Date.now();
        const accepted = await call<{ id: string }>(`${url}/sign-requests`, { apiKey, body: request.body });
        if (accepted.status !== 202) throw new Error(`POST answered ${accepted.status}`);
        const done = await call<SignRequestView>(`${url}/sign-requests/${accepted.body.id}?wait=20`, {
          apiKey,
        });
        const ms = Date.now() - started;
        const view = done.body;
        let signature = false;
        let chain = false;
        if (view.status === 'signed') {
          const leaf = new X509Certificate(view.certificate!);
          signature = opensslVerifyDigest({
            publicKeySpki: leaf.publicKey.export({ type: 'spki', format: 'der' }),
            digest: Buffer.from(request.body.digest, 'base64'),
            signature: Buffer.from(view.signature!, 'base64'),
            digestAlgorithm,
            signatureAlgorithm: scheme,
          });
          chain = opensslVerifyChain({
            rootPem,
            intermediatePems: [view.chain![0]],
            leafPem: view.certificate!,
          }).ok;
        }
        if (!signature || !chain) failures++;
        rows.push({
          keyType,
          scheme,
          digest: digestAlgorithm,
          status: view.status,
          pooled: view.pooledKey ? 'yes' : 'no',
          'client ms': ms,
          'openssl signature': signature ? 'verified' : 'FAILED',
          'openssl chain': chain ? 'OK' : 'FAILED',
        });
      }
    }
  }
  // AdES containers: the certificate first, then the signed attributes naming it (openssl cms -verify).
  const cmsRows: Row[] = [];
  for (const keyType of KEY_TYPES) {
    const request = await sampleRequest(keyType, i++, { format: 'cms', profile: 'CAdES-B-B' });
    const accepted = await call<{ id: string }>(`${url}/sign-requests`, { apiKey, body: request.body });
    if (accepted.status !== 202) throw new Error(`POST answered ${accepted.status}`);
    const view = (await call<SignRequestView>(`${url}/sign-requests/${accepted.body.id}?wait=20`, { apiKey }))
      .body;
    const verified =
      view.status === 'signed' &&
      opensslCmsVerify({ cms: Buffer.from(view.cms!, 'base64'), content: request.document, rootPem }).ok;
    if (!verified) failures++;
    cmsRows.push({
      keyType,
      profile: 'CAdES-B-B',
      status: view.status,
      signer: view.certificate
        ? (new X509Certificate(view.certificate).subject.split('\n').pop() ?? '')
        : '-',
      'openssl cms -verify': verified ? 'OK' : 'FAILED',
    });
  }
  printTable(`Demo against ${url}`, rows);
  printTable('CMS containers (format cms)', cmsRows);
  console.log(
    failures === 0 ? '\nall results verified with openssl' : `\n${failures} result(s) FAILED verification`,
  );
  process.exit(failures === 0 ? 0 : 1);
}

main().catch((err: Error) => {
  console.error(`demo failed: ${err.name}: ${err.message}`);
  process.exit(1);
});
