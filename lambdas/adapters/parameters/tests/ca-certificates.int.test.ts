/**
 * CA certificate stores. The SSM store runs the real SDK client against a loopback stand-in that speaks
 * the SSM JSON protocol (GetParameters, PutParameter): there is no SSM stand-in among the local services.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { caCertificateStore, fileCaCertificateStore } from '../src/ca-certificates';

/** Stand-ins for PEMs: the stores keep only values that look like a PEM certificate. */
const pemOf = (name: string): string => `-----BEGIN CERTIFICATE-----\n${name}\n-----END CERTIFICATE-----\n`;

describe('the SSM store', () => {
  const parameters = new Map<string, string>();
  let server: Server;
  let endpoint: string;

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const input = JSON.parse(body) as { Names?: string[]; Name?: string; Value?: string };
        const target = String(req.headers['x-amz-target']);
        let out: unknown;
        if (target === 'AmazonSSM.PutParameter') {
          parameters.set(input.Name!, input.Value!);
          out = { Version: 1 };
        } else if (target === 'AmazonSSM.GetParameters') {
          const names = input.Names ?? [];
          out = {
            Parameters: names
              .filter((n) => parameters.has(n))
              .map((n) => ({ Name: n, Value: parameters.get(n) })),
            InvalidParameters: names.filter((n) => !parameters.has(n)),
          };
        }
        res.writeHead(out ? 200 : 400, { 'content-type': 'application/x-amz-json-1.1' });
        res.end(JSON.stringify(out ?? { __type: 'ValidationException' }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it('writes and reads the PEMs under the prefix; placeholders read as absent', async () => {
    const store = caCertificateStore(
      { kind: 'ssm', prefix: '/signing/ca' },
      { region: 'eu-north-1', endpoints: { ssm: endpoint } },
    );
    expect(store.location).toBe('ssm:/signing/ca');
    expect(await store.read()).toBeUndefined();
    await store.write({ rootPem: pemOf('ROOT'), issuingPem: pemOf('ISSUING') });
    expect([...parameters.keys()].sort()).toEqual(['/signing/ca/issuing.pem', '/signing/ca/root.pem']);
    expect(await store.read()).toEqual({ rootPem: pemOf('ROOT'), issuingPem: pemOf('ISSUING') });
    await store.write({ rootPem: pemOf('ROOT'), issuingPem: pemOf('ISSUING'), ocspPem: pemOf('OCSP') });
    expect(await store.read()).toEqual({
      rootPem: pemOf('ROOT'),
      issuingPem: pemOf('ISSUING'),
      ocspPem: pemOf('OCSP'),
    });
    parameters.set('/signing/ca/ocsp.pem', 'PLACEHOLDER: written by the CA bootstrap');
    expect((await store.read())?.ocspPem).toBeUndefined();
    parameters.delete('/signing/ca/issuing.pem');
    expect(await store.read()).toBeUndefined();
    expect(await store.readEach()).toEqual({
      rootPem: pemOf('ROOT'),
      issuingPem: undefined,
      ocspPem: undefined,
    });
  });
});

describe('the file store', () => {
  it('writes root.pem and issuing.pem into the directory and reads them back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ca-store-'));
    try {
      const store = fileCaCertificateStore(join(dir, 'nested'));
      expect(await store.read()).toBeUndefined();
      await store.write({ rootPem: pemOf('R'), issuingPem: pemOf('I') });
      expect(readFileSync(join(dir, 'nested', 'root.pem'), 'utf8')).toBe(pemOf('R'));
      expect(await store.read()).toEqual({ rootPem: pemOf('R'), issuingPem: pemOf('I') });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
