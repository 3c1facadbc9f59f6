/**
 * `npm run bench -- levels [--n N]`: what B-T and B-LT add to a `cms` signature, measured in one run on
 * SoftHSM, beside the B-B work they extend:
 *
 *   - B-B's own HSM work for an EC-P256 request: the one-time key's signature over the signed attributes;
 *   - B-T: one time-stamp from the TSA (request parsed, TSTInfo built, one HSM signature by the TSA's
 *     EC-P256 key on its own token), wall time and CPU of this process;
 *   - B-LT: the OCSP response for the new certificate (one HSM signature by the responder's key: each new
 *     certificate is a new state, so nothing is cached) and the container built with the token and the
 *     validation data, against the B-B container;
 *   - the result's size at each level.
 * Each figure is the median of N, in alternation so every part sees the same machine.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { connectHsm } from '@pipeline/adapters/hsm';
import { fileCaCertificateStore } from '@pipeline/adapters/parameters';
import { OcspResponder, TimeStampAuthority } from '@pipeline/ca';
import { loadCaConfig, loadConfig } from '@pipeline/config';
import {
  ocspRequestFor,
  pemToDer,
  prepareCmsContainer,
  timeStampRequest,
  timeStampTokenOf,
} from '@pipeline/der';
import { LOCAL_DIR } from '../local/paths';
import { finish, option, printTable } from './report';
import { median, msSince, percentile, round } from './stats';

type CaCertificates = NonNullable<Awaited<ReturnType<ReturnType<typeof fileCaCertificateStore>['read']>>>;
type ConnectedHsm = Awaited<ReturnType<typeof connectHsm>>;

/** Each part's times over the measured rounds, in ms. */
interface Samples {
  readonly bb: number[];
  readonly stamp: number[];
  readonly stampCpu: number[];
  readonly ocsp: number[];
  readonly containerBB: number[];
  readonly containerLT: number[];
}

/** What one round signs with and asks: set up once. */
interface Parts {
  readonly pool: ConnectedHsm;
  readonly key: Awaited<ReturnType<ConnectedHsm['generateKeyPair']>>;
  readonly tsa: TimeStampAuthority;
  readonly responder: OcspResponder;
  readonly ocspQuery: ReturnType<typeof ocspRequestFor>;
  readonly certificates: CaCertificates & { readonly tsaPem: string };
  readonly leafPem: string;
  readonly rootCrl: Buffer;
}

export async function run(args: string[]): Promise<void> {
  const n = Number(option(args, 'n') ?? '300');
  if (!Number.isInteger(n) || n < 10)
    throw new Error('usage: npm run bench -- levels [--n <count, at least 10>]');
  const config = loadConfig(process.env);
  const ca = loadCaConfig({ CA_CERTS_SOURCE: `file:${join(LOCAL_DIR, 'ca')}`, ...process.env });
  const certificates = await fileCaCertificateStore(join(LOCAL_DIR, 'ca')).read();
  if (!certificates?.tsaPem) throw new Error('no TSA certificate in .local/ca: run scripts/bootstrap.sh');
  const pool = await connectHsm({ ...config.hsm, sessionPoolSize: 2 }, config.aws);
  const tsaHsm = await connectHsm(
    { ...config.hsm, pinSource: ca.tsaPinSource, tokenLabel: ca.tsaTokenLabel, sessionPoolSize: 2 },
    config.aws,
  );
  const ocspHsm = await connectHsm(
    { ...config.hsm, pinSource: ca.ocspPinSource, tokenLabel: ca.ocspTokenLabel, sessionPoolSize: 2 },
    config.aws,
  );
  try {
    const tsa = await TimeStampAuthority.create({ hsm: tsaHsm, caCertificates: certificates, config: ca });
    const responder = await staleResponder(ocspHsm, certificates, ca);
    const leafPem = certificates.ocspPem!;
    const ocspQuery = ocspRequestFor(pemToDer(leafPem), pemToDer(certificates.issuingPem));
    const key = await pool.generateKeyPair('EC-P256', { extractable: false });
    const rootCrlFile = join(LOCAL_DIR, 'pki', 'default', 'root.crl');
    if (!existsSync(rootCrlFile))
      throw new Error(`no ${rootCrlFile}: run npm start once (it publishes the CRLs)`);
    const parts: Parts = {
      pool,
      key,
      tsa,
      responder,
      ocspQuery,
      certificates: { ...certificates, tsaPem: certificates.tsaPem },
      leafPem,
      rootCrl: readFileSync(rootCrlFile),
    };

    const samples: Samples = { bb: [], stamp: [], stampCpu: [], ocsp: [], containerBB: [], containerLT: [] };
    let sizes = { bb: 0, bt: 0, blt: 0 };
    for (let i = 0; i < n + 10; i++) sizes = await oneRound(parts, i >= 10 ? samples : undefined);
    await pool.destroy(key.privateKey);
    report(n, samples, sizes);
  } finally {
    await Promise.all([pool.close(), tsaHsm.close(), ocspHsm.close()]);
  }
}

/**
 * The responder answers for the issuing CA; the certificate asked about is the responder's own (its
 * issuer is the issuing CA), reported good by a stand-in for the records. Each call an hour later than
 * the last: the cached answer is always stale, as for a new certificate.
 */
async function staleResponder(
  ocspHsm: ConnectedHsm,
  certificates: CaCertificates,
  ca: ReturnType<typeof loadCaConfig>,
): Promise<OcspResponder> {
  let calls = 0;
  return OcspResponder.create({
    hsm: ocspHsm,
    caCertificates: certificates,
    config: ca,
    store: {
      statuses: async (serials) =>
        new Map(
          serials.map(
            (serialHex) =>
              [serialHex, { serialHex, requestId: 'bench', notAfter: Date.now() + 86_400_000 }] as const,
          ),
        ),
    },
    publishedCrl: async () => undefined,
    now: () => Date.now() + calls++ * 3_600_000,
  });
}

/**
 * One round: the B-B signature, a time-stamp over it, an OCSP response, and the B-B and B-LT containers;
 * their times go into `samples` (none in a warm-up round). Returns the result's size at each level.
 */
async function oneRound(
  parts: Parts,
  samples: Samples | undefined,
): Promise<{ bb: number; bt: number; blt: number }> {
  const { pool, key, tsa, responder, ocspQuery, certificates, leafPem, rootCrl } = parts;
  const prepared = prepareCmsContainer({
    profile: 'CAdES-B-B',
    digestAlgorithm: 'SHA-256',
    signatureAlgorithm: 'ECDSA',
    messageDigest: createHash('sha256').update(randomBytes(32)).digest(),
    certificatePem: leafPem,
    chainPem: [certificates.issuingPem, certificates.rootPem],
    signingTime: new Date(),
  });
  let t = process.hrtime.bigint();
  const signature = await pool.signDigest(key.privateKey, prepared.toBeSigned, {
    digestAlgorithm: 'SHA-256',
    signatureAlgorithm: 'ECDSA',
  });
  samples?.bb.push(msSince(t));

  const request = timeStampRequest({ data: signature, algorithm: 'SHA-256', nonce: randomBytes(8) });
  const cpu = process.cpuUsage();
  t = process.hrtime.bigint();
  const token = timeStampTokenOf((await tsa.respond(request.der)).der, request);
  if (samples) {
    samples.stamp.push(msSince(t));
    const used = process.cpuUsage(cpu);
    samples.stampCpu.push((used.user + used.system) / 1000);
  }

  t = process.hrtime.bigint();
  const ocspResponse = (await responder.respond(ocspQuery)).der;
  samples?.ocsp.push(msSince(t));

  t = process.hrtime.bigint();
  const plain = prepared.finish(signature);
  samples?.containerBB.push(msSince(t));
  const validationData = {
    certificates: [
      pemToDer(certificates.issuingPem),
      pemToDer(certificates.rootPem),
      pemToDer(certificates.tsaPem),
    ],
    ocspResponses: [ocspResponse],
    crls: [rootCrl],
  };
  t = process.hrtime.bigint();
  const longTerm = prepared.finish(signature, { timeStampToken: token, validationData });
  samples?.containerLT.push(msSince(t));
  return {
    bb: plain.length,
    bt: prepared.finish(signature, { timeStampToken: token }).length,
    blt: longTerm.length,
  };
}

/** Prints the table and what each level adds, and writes the result file. */
function report(n: number, samples: Samples, sizes: { bb: number; bt: number; blt: number }): void {
  const { bb, stamp, stampCpu, ocsp, containerBB, containerLT } = samples;
  const stat = (values: number[]) => ({ p50: round(median(values)), p95: round(percentile(values, 95)) });
  const result = {
    n,
    bbSignatureMs: stat(bb),
    timeStampMs: stat(stamp),
    timeStampCpuMs: round(median(stampCpu)),
    ocspResponseMs: stat(ocsp),
    containerBBMs: stat(containerBB),
    containerLTMs: stat(containerLT),
    addedBTMs: round(median(stamp)),
    addedBLTMs: round(median(stamp) + median(ocsp) + median(containerLT) - median(containerBB)),
    ratioTimeStampToBBSignature: round(median(stamp) / median(bb), 2),
    bytes: sizes,
  };
  printTable(`levels: what B-T and B-LT add (EC-P256, median of ${n})`, [
    {
      part: 'B-B: one-time key signature (HSM)',
      p50: result.bbSignatureMs.p50,
      p95: result.bbSignatureMs.p95,
    },
    { part: 'B-T: time-stamp (TSA, HSM)', p50: result.timeStampMs.p50, p95: result.timeStampMs.p95 },
    { part: 'B-LT: OCSP response (HSM)', p50: result.ocspResponseMs.p50, p95: result.ocspResponseMs.p95 },
    { part: 'container B-B', p50: result.containerBBMs.p50, p95: result.containerBBMs.p95 },
    { part: 'container B-LT', p50: result.containerLTMs.p50, p95: result.containerLTMs.p95 },
  ]);
  console.log(
    `B-T adds ${result.addedBTMs} ms (${result.timeStampCpuMs} ms CPU, ${result.ratioTimeStampToBBSignature}x the B-B signature); ` +
      `B-LT adds ${result.addedBLTMs} ms in all; result ${sizes.bb} -> ${sizes.bt} (B-T) -> ${sizes.blt} bytes (B-LT)`,
  );
  finish('levels', result);
}
