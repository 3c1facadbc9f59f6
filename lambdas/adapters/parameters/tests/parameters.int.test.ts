/**
 * Parameters and secrets through Powertools Parameters, with the real SDK clients against a loopback
 * stand-in that speaks the SSM and Secrets Manager JSON protocols (there is no such stand-in among the
 * local services).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cscSecretSources, loadCscConfig, type AwsConfig } from '@pipeline/config';
import { SsmParameterStore, readSecretText, resolvePin } from '../src';

const parameters = new Map<string, string>();
const secrets = new Map<string, string>();
const calls: string[] = [];
let server: Server;
let aws: AwsConfig;

function answer(target: string, input: Record<string, unknown>): [number, unknown] {
  const name = String(input.Name ?? input.SecretId);
  switch (target) {
    case 'AmazonSSM.GetParameter':
      return parameters.has(name)
        ? [200, { Parameter: { Name: name, Value: parameters.get(name), Type: 'String' } }]
        : [400, { __type: 'ParameterNotFound', message: 'no such parameter' }];
    case 'AmazonSSM.GetParameters': {
      const names = input.Names as string[];
      return [
        200,
        {
          Parameters: names
            .filter((n) => parameters.has(n))
            .map((n) => ({ Name: n, Value: parameters.get(n), Type: 'String' })),
          InvalidParameters: names.filter((n) => !parameters.has(n)),
        },
      ];
    }
    case 'AmazonSSM.PutParameter':
      parameters.set(name, String(input.Value));
      return [200, { Version: 1, Tier: input.Tier }];
    case 'secretsmanager.GetSecretValue':
      return secrets.has(name)
        ? [200, { Name: name, SecretString: secrets.get(name) }]
        : [400, { __type: 'ResourceNotFoundException', message: 'no such secret' }];
    default:
      return [400, { __type: 'ValidationException' }];
  }
}

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const target = String(req.headers['x-amz-target']);
      calls.push(target);
      const [status, out] = answer(target, JSON.parse(body) as Record<string, unknown>);
      res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' });
      res.end(JSON.stringify(out));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  aws = { region: 'eu-north-1', endpoints: { ssm: endpoint, secretsmanager: endpoint } };
});

afterAll(() => new Promise((resolve) => server.close(resolve)));

beforeEach(() => {
  parameters.clear();
  secrets.clear();
  calls.length = 0;
});

describe('SsmParameterStore', () => {
  it('reads one parameter, undefined when there is none, and reuses a value for its max age', async () => {
    const store = SsmParameterStore.create(aws, { maxAgeSeconds: 60 });
    expect(await store.get('/p/missing')).toBeUndefined();
    parameters.set('/p/one', 'first');
    expect(await store.get('/p/one')).toBe('first');
    parameters.set('/p/one', 'changed elsewhere');
    expect(await store.get('/p/one')).toBe('first');
    expect(calls.filter((c) => c === 'AmazonSSM.GetParameter')).toHaveLength(2);
  });

  it('reads every time with max age 0, and sees its own writes at once', async () => {
    const fresh = SsmParameterStore.create(aws, { maxAgeSeconds: 0 });
    parameters.set('/p/one', 'first');
    expect(await fresh.get('/p/one')).toBe('first');
    parameters.set('/p/one', 'second');
    expect(await fresh.get('/p/one')).toBe('second');

    const cached = SsmParameterStore.create(aws, { maxAgeSeconds: 60 });
    expect(await cached.get('/p/one')).toBe('second');
    await cached.put('/p/one', 'third', 'Advanced');
    expect(parameters.get('/p/one')).toBe('third');
    expect(await cached.get('/p/one')).toBe('third');
  });

  it('reads many names in one call and leaves out those that do not exist', async () => {
    parameters.set('/p/a', 'A');
    parameters.set('/p/c', 'C');
    const store = SsmParameterStore.create(aws, { maxAgeSeconds: 0 });
    expect(await store.getMany(['/p/a', '/p/b', '/p/c'])).toEqual(
      new Map([
        ['/p/a', 'A'],
        ['/p/c', 'C'],
      ]),
    );
    expect(calls).toEqual(['AmazonSSM.GetParameters']);
    parameters.set('/p/b', 'B');
    expect((await store.getMany(['/p/a', '/p/b'])).get('/p/b')).toBe('B');
  });
});

describe('resolvePin from Secrets Manager', () => {
  const source = { kind: 'secretsmanager', secretId: 'hsm/pool' } as const;

  it('reads a plain PIN, and a JSON user and password as CloudHSM wants it', async () => {
    secrets.set('hsm/pool', ' 1234 \n');
    expect(await resolvePin(source, aws)).toBe('1234');
    secrets.set('hsm/ca', JSON.stringify({ username: 'ca-user', password: 'secret' }));
    expect(await resolvePin({ kind: 'secretsmanager', secretId: 'hsm/ca' }, aws)).toBe('ca-user:secret');
  });

  it('names the secret, never a PIN, when it cannot be read', async () => {
    await expect(resolvePin({ kind: 'secretsmanager', secretId: 'hsm/none' }, aws)).rejects.toThrow(
      'the HSM PIN secret hsm/none could not be read',
    );
  });
});

describe('readSecretText (the CSC API secrets)', () => {
  const clients = [
    {
      clientId: 'portal',
      name: 'Portal',
      secretHash: 'a'.repeat(64),
      redirectUris: ['https://p.example/cb'],
    },
  ];

  it('reads CSC_CLIENTS and CSC_IDP_CLIENT_KEY from the secrets their variables name, as the csc wiring does', async () => {
    secrets.set('arn:csc/clients', JSON.stringify(clients));
    secrets.set('arn:csc/key', '{"kty":"EC","crv":"P-256","d":"x"}');
    const env = {
      CSC_BASE_URL: 'https://sign.example.se/csc/v2',
      CSC_CLIENTS: 'secretsmanager:arn:csc/clients',
      CSC_IDP_CLIENT_KEY: 'secretsmanager:arn:csc/key',
    };
    const sources = cscSecretSources(env);
    expect(sources).toEqual({
      idpClientKey: { kind: 'secretsmanager', secretId: 'arn:csc/key' },
      clients: { kind: 'secretsmanager', secretId: 'arn:csc/clients' },
    });
    const clientsText = await readSecretText(sources.clients!, 'CSC_CLIENTS', aws);
    expect(loadCscConfig(env, 'https://idp.example.se', clientsText).clients).toEqual(clients);
    expect(await readSecretText(sources.idpClientKey, 'CSC_IDP_CLIENT_KEY', aws)).toBe(
      '{"kty":"EC","crv":"P-256","d":"x"}',
    );
    // A secret the variable names but nobody read is refused, not taken for an empty client list.
    expect(() => loadCscConfig(env, 'https://idp.example.se')).toThrow(
      expect.objectContaining({ variable: 'CSC_CLIENTS' }),
    );
  });

  it('reads a file locally; inline JSON clients need no source', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'csc-secret-'));
    writeFileSync(join(dir, 'key.json'), '{"kty":"EC"}\n');
    expect(await readSecretText({ kind: 'file', path: join(dir, 'key.json') }, 'CSC_IDP_CLIENT_KEY')).toBe(
      '{"kty":"EC"}',
    );
    const env = { CSC_CLIENTS: JSON.stringify(clients), CSC_IDP_CLIENT_KEY: `file:${join(dir, 'key.json')}` };
    expect(cscSecretSources(env).clients).toBeUndefined();
  });

  it('names the variable and the source, never the value, when a secret is missing or empty; refuses other forms', async () => {
    secrets.set('arn:csc/empty', ' ');
    for (const secretId of ['arn:csc/none', 'arn:csc/empty']) {
      await expect(
        readSecretText({ kind: 'secretsmanager', secretId }, 'CSC_IDP_CLIENT_KEY', aws),
      ).rejects.toThrow(`CSC_IDP_CLIENT_KEY: the secret ${secretId} is missing, unreadable or empty`);
    }
    expect(() => cscSecretSources({ CSC_IDP_CLIENT_KEY: 'env:KEY' })).toThrow(
      expect.objectContaining({ variable: 'CSC_IDP_CLIENT_KEY' }),
    );
  });
});
