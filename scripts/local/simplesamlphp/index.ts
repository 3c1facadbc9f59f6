/**
 * SimpleSAMLphp (Debian's simplesamlphp package, run by `php -S` on loopback) as a SAML 2.0 identity
 * provider nobody here wrote, for end-to-end tests of our SP side: a private configuration in a temporary
 * directory (one trusted SP read from its metadata, exampleauth:UserPass users), configured as the
 * Swedish eID framework wants an IdP towards a signature service (signed AuthnRequests required, Response
 * and assertion signed with rsa-sha256, no encryption, attributes with NameFormat uri, loa3 as the
 * AuthnContextClassRef and as the assurance certification in its metadata).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadOrCreateKeyPair } from '../saml-idp/keys';
import { readSpMetadata } from '../saml-idp/metadata';

export interface SimpleSamlUser {
  readonly username: string;
  readonly password: string;
  /** SAML attribute name (a URI such as urn:oid:1.2.752.29.4.13) → its one value. */
  readonly attributes: Readonly<Record<string, string>>;
}

export interface SimpleSamlIdp {
  readonly entityId: string;
  readonly port: number;
  /** The SingleSignOnService location (HTTP-POST binding). */
  readonly ssoUrl: string;
  /** Its md:EntityDescriptor, as SimpleSAMLphp publishes it. */
  readonly metadataXml: string;
  close(): Promise<void>;
}

export interface SimpleSamlOptions {
  /** The one trusted SP's md:EntityDescriptor (entityID, signing certificate, HTTP-POST ACS). */
  readonly spMetadataXml: string;
  readonly users: readonly SimpleSamlUser[];
  /** Default: a free loopback port. */
  readonly port?: number;
}

/** Thrown when the Debian packages are missing or SimpleSAMLphp does not come up. */
export class SimpleSamlPhpError extends Error {
  public override readonly name = 'SimpleSamlPhpError';
}

const WWW = '/usr/share/simplesamlphp/www';
const PACKAGES = ['php-cli', 'php-xml', 'php-mbstring', 'simplesamlphp'];
const LOA3 = 'http://id.elegnamnden.se/loa/1.0/loa3';
const POST = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST';
const URI_FORMAT = 'urn:oasis:names:tc:SAML:2.0:attrname-format:uri';
const TRANSIENT = 'urn:oasis:names:tc:SAML:2.0:nameid-format:transient';
const RSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';
const AUTH_SOURCE = 'citizens';

/** Starts SimpleSAMLphp; resolves once its metadata URL answers. */
export async function startSimpleSamlPhp(options: SimpleSamlOptions): Promise<SimpleSamlIdp> {
  requirePackages();
  const sp = readSpMetadata(options.spMetadataXml);
  for (const user of options.users) {
    // exampleauth:UserPass keys its users by "username:password".
    if (user.username.includes(':') || user.username === '') {
      throw new SimpleSamlPhpError('a username must be non-empty and must not contain ":"');
    }
  }
  const port = options.port ?? (await freePort());
  const base = `http://127.0.0.1:${port}/`;
  const entityId = `${base}saml2/idp/metadata.php`;
  const ssoUrl = `${base}saml2/idp/SSOService.php`;
  const dir = mkdtempSync(join(tmpdir(), 'simplesamlphp-'));
  let php: ChildProcess | undefined;
  try {
    const keys = join(dir, 'keys');
    loadOrCreateKeyPair(keys, 'SimpleSAMLphp test IdP');
    writeConfig(dir, {
      base,
      entityId,
      keyFile: join(keys, 'key.pem'),
      certFile: join(keys, 'cert.pem'),
      users: options.users,
      sp: { entityId: sp.entityId, acsUrl: sp.acsUrls[0]!, certData: sp.signingCerts.map((c) => c.raw) },
    });
    const output: string[] = [];
    php = spawn('php', ['-S', `127.0.0.1:${port}`, '-t', WWW], {
      env: { ...process.env, SIMPLESAMLPHP_CONFIG_DIR: join(dir, 'config') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (chunk: Buffer): void => {
      output.push(chunk.toString('utf8'));
      if (output.length > 200) output.shift();
    };
    php.stdout!.on('data', keep);
    php.stderr!.on('data', keep);
    const metadataXml = await waitForMetadata(entityId, php, output);
    const running = php;
    return {
      entityId,
      port,
      ssoUrl,
      metadataXml,
      close: async () => {
        await stop(running);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    if (php !== undefined) await stop(php);
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

function requirePackages(): void {
  const missing = [
    ...(phpHas('true') ? [] : ['php-cli']),
    ...(phpHas('class_exists("DOMDocument")') ? [] : ['php-xml']),
    ...(phpHas('function_exists("mb_strlen")') ? [] : ['php-mbstring']),
    ...(existsSync(WWW) ? [] : ['simplesamlphp']),
  ];
  if (missing.length > 0) {
    throw new SimpleSamlPhpError(
      `SimpleSAMLphp needs the Debian packages ${missing.join(', ')}: apt-get install -y ${PACKAGES.join(' ')} (scripts/bootstrap.sh installs them)`,
    );
  }
}

/** Whether php runs and the expression holds in it. */
function phpHas(expression: string): boolean {
  try {
    // The env given explicitly: Jest hands tests a copy of process.env that the default would bypass.
    execFileSync('php', ['-r', `exit(${expression} ? 0 : 1);`], { stdio: 'ignore', env: process.env });
    return true;
  } catch {
    return false;
  }
}

interface ConfigInput {
  readonly base: string;
  readonly entityId: string;
  readonly keyFile: string;
  readonly certFile: string;
  readonly users: readonly SimpleSamlUser[];
  readonly sp: { readonly entityId: string; readonly acsUrl: string; readonly certData: readonly Buffer[] };
}

/**
 * SimpleSAMLphp's configuration files are PHP; each here only decodes a JSON file beside it, so no value
 * is ever written as PHP source.
 */
function writeConfig(dir: string, c: ConfigInput): void {
  const config = join(dir, 'config');
  const metadata = join(dir, 'metadata');
  for (const sub of ['config', 'metadata', 'sessions', 'tmp', 'log', 'data']) {
    mkdirSync(join(dir, sub), { mode: 0o700 });
  }
  const phpFromJson = (file: string, json: unknown, variable: string, key?: string): void => {
    writeFileSync(file + '.json', JSON.stringify(json));
    const target = key === undefined ? `$${variable}` : `$${variable}[${JSON.stringify(key)}]`;
    writeFileSync(
      file + '.php',
      `<?php\n${target} = json_decode(file_get_contents(${JSON.stringify(file + '.json')}), true, 512, JSON_THROW_ON_ERROR);\n`,
    );
  };
  phpFromJson(join(config, 'config'), globalConfig(dir, c.base), 'config');
  phpFromJson(
    join(config, 'authsources'),
    {
      [AUTH_SOURCE]: {
        0: 'exampleauth:UserPass',
        ...Object.fromEntries(
          c.users.map((u) => [
            `${u.username}:${u.password}`,
            Object.fromEntries(Object.entries(u.attributes).map(([name, value]) => [name, [value]])),
          ]),
        ),
      },
    },
    'config',
  );
  const signing = {
    'saml20.sign.response': true,
    'saml20.sign.assertion': true,
    'assertion.encryption': false,
    'nameid.encryption': false,
    'signature.algorithm': RSA_SHA256,
    'attributes.NameFormat': URI_FORMAT,
    'validate.authnrequest': true,
    NameIDFormat: TRANSIENT,
  };
  phpFromJson(
    join(metadata, 'saml20-idp-hosted'),
    {
      host: '__DEFAULT__',
      privatekey: c.keyFile,
      certificate: c.certFile,
      auth: AUTH_SOURCE,
      SingleSignOnServiceBinding: [POST],
      SingleLogoutServiceBinding: [],
      EntityAttributes: { 'urn:oasis:names:tc:SAML:attribute:assurance-certification': [LOA3] },
      // Every login here is at loa3: exampleauth knows no levels.
      authproc: { 10: { class: 'saml:AuthnContextClassRef', AuthnContextClassRef: LOA3 } },
      ...signing,
    },
    'metadata',
    c.entityId,
  );
  phpFromJson(
    join(metadata, 'saml20-sp-remote'),
    {
      AssertionConsumerService: [{ Binding: POST, Location: c.sp.acsUrl, index: 0 }],
      keys: c.sp.certData.map((der) => ({
        type: 'X509Certificate',
        signing: true,
        encryption: false,
        X509Certificate: der.toString('base64'),
      })),
      ...signing,
    },
    'metadata',
    c.sp.entityId,
  );
}

function globalConfig(dir: string, base: string): Record<string, unknown> {
  return {
    baseurlpath: base,
    certdir: join(dir, 'keys') + '/',
    loggingdir: join(dir, 'log') + '/',
    datadir: join(dir, 'data') + '/',
    tempdir: join(dir, 'tmp'),
    metadatadir: join(dir, 'metadata') + '/',
    secretsalt: randomBytes(32).toString('hex'),
    'auth.adminpassword': randomBytes(32).toString('hex'),
    'admin.protectindexpage': true,
    'admin.protectmetadata': false,
    'admin.checkforupdates': false,
    technicalcontact_name: 'Test',
    technicalcontact_email: 'na@example.org',
    timezone: 'UTC',
    'enable.saml20-idp': true,
    'enable.shib13-idp': false,
    'enable.adfs-idp': false,
    'module.enable': { exampleauth: true, core: true, saml: true },
    'store.type': 'phpsession',
    'session.phpsession.savepath': join(dir, 'sessions'),
    'session.cookie.secure': false,
    'session.cookie.samesite': 'Lax',
    'language.cookie.secure': false,
    'logging.handler': 'stderr',
    'logging.level': 5, // NOTICE
    'statistics.out': [],
    showerrors: true,
    errorreporting: false,
    production: true,
  };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address !== null ? resolve(address.port) : reject(),
      );
    });
  });
}

async function waitForMetadata(url: string, php: ChildProcess, output: readonly string[]): Promise<string> {
  const deadline = Date.now() + 20_000;
  let last = '';
  while (Date.now() < deadline) {
    if (php.exitCode !== null) break;
    try {
      const answer = await fetch(url, { signal: AbortSignal.timeout(5_000) });
      const body = await answer.text();
      if (answer.ok && body.includes('EntityDescriptor'))
        return body.slice(body.indexOf('<md:EntityDescriptor'));
      last = `HTTP ${answer.status}`;
    } catch (err) {
      last = String(err);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new SimpleSamlPhpError(
    `SimpleSAMLphp did not publish its metadata at ${url} (${last}); its output:\n${output.join('').slice(-4_000)}`,
  );
}

async function stop(php: ChildProcess): Promise<void> {
  if (php.exitCode !== null || php.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    php.once('exit', () => resolve());
    php.kill('SIGTERM');
  });
}
