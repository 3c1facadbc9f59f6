/**
 * Where the CA certificates are kept: a local directory (files written then renamed) or SSM String
 * parameters in AWS; both implement the core's CaCertificateStore.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CaCertificateStore, CaCertificates } from '@pipeline/core/pki';
import type { AwsConfig, CaCertsSource } from '@pipeline/config';
import { SsmParameterStore } from './parameter-store';

const ROOT = 'root.pem';
const ISSUING = 'issuing.pem';
const OCSP = 'ocsp.pem';
const TSA = 'tsa.pem';

/** A stored value that is a PEM certificate; placeholders (the stack's initial SSM values) are not. */
function pemOrUndefined(value: string | undefined): string | undefined {
  return value?.includes('-----BEGIN CERTIFICATE-----') ? value : undefined;
}

function complete(each: Partial<CaCertificates>): CaCertificates | undefined {
  return each.rootPem && each.issuingPem
    ? {
        rootPem: each.rootPem,
        issuingPem: each.issuingPem,
        ...(each.ocspPem ? { ocspPem: each.ocspPem } : {}),
        ...(each.tsaPem ? { tsaPem: each.tsaPem } : {}),
      }
    : undefined;
}

/** Locally: `<dir>/root.pem` and `<dir>/issuing.pem` (the git-ignored .local/ca by default). */
export function fileCaCertificateStore(dir: string): CaCertificateStore {
  const read = (name: string): Promise<string | undefined> =>
    readFile(join(dir, name), 'utf8').catch(() => undefined);
  // Write then rename, so a reader never sees half a PEM.
  const write = async (name: string, text: string): Promise<void> => {
    const file = join(dir, name);
    await writeFile(`${file}.tmp`, text, { mode: 0o644 });
    await rename(`${file}.tmp`, file);
  };
  const readEach = async (): Promise<Partial<CaCertificates>> => {
    const [rootPem, issuingPem, ocspPem, tsaPem] = await Promise.all([ROOT, ISSUING, OCSP, TSA].map(read));
    return {
      rootPem: pemOrUndefined(rootPem),
      issuingPem: pemOrUndefined(issuingPem),
      ocspPem: pemOrUndefined(ocspPem),
      tsaPem: pemOrUndefined(tsaPem),
    };
  };
  return {
    location: dir,
    readEach,
    read: () => readEach().then(complete),
    async write(certificates: CaCertificates) {
      await mkdir(dir, { recursive: true });
      await write(ROOT, certificates.rootPem);
      await write(ISSUING, certificates.issuingPem);
      if (certificates.ocspPem) await write(OCSP, certificates.ocspPem);
      if (certificates.tsaPem) await write(TSA, certificates.tsaPem);
    },
  };
}

/**
 * In AWS: SSM String parameters `<prefix>/root.pem`, `<prefix>/issuing.pem`, `<prefix>/ocsp.pem` and
 * `<prefix>/tsa.pem` (certificates are public).
 */
export function ssmCaCertificateStore(parameters: SsmParameterStore, prefix: string): CaCertificateStore {
  const root = `${prefix}/${ROOT}`;
  const issuing = `${prefix}/${ISSUING}`;
  const ocsp = `${prefix}/${OCSP}`;
  const tsa = `${prefix}/${TSA}`;
  const readEach = async (): Promise<Partial<CaCertificates>> => {
    const values = await parameters.getMany([root, issuing, ocsp, tsa]);
    const value = (name: string): string | undefined => values.get(name) || undefined;
    return {
      rootPem: pemOrUndefined(value(root)),
      issuingPem: pemOrUndefined(value(issuing)),
      ocspPem: pemOrUndefined(value(ocsp)),
      tsaPem: pemOrUndefined(value(tsa)),
    };
  };
  return {
    location: `ssm:${prefix}`,
    readEach,
    read: () => readEach().then(complete),
    async write(certificates: CaCertificates) {
      const values: Array<[string, string | undefined]> = [
        [root, certificates.rootPem],
        [issuing, certificates.issuingPem],
        [ocsp, certificates.ocspPem],
        [tsa, certificates.tsaPem],
      ];
      for (const [name, value] of values) {
        if (value !== undefined) await parameters.put(name, value);
      }
    },
  };
}

export function caCertificateStore(source: CaCertsSource, aws: AwsConfig): CaCertificateStore {
  if (source.kind === 'file') return fileCaCertificateStore(source.dir);
  // Read at set-up and again after maintenance changed them: a cached value could only be stale.
  return ssmCaCertificateStore(SsmParameterStore.create(aws, { maxAgeSeconds: 0 }), source.prefix);
}
