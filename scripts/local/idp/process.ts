/**
 * Starts the local IdP (./main.ts) as a child process, for the local runner and the Jest global setup.
 * Nothing here imports oidc-provider: it runs only in the child.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ROOT } from '../paths';
import { DEFAULT_KEYS_FILE, rotateSigningKeys, type SigningKeyType } from './keys';

export interface IdpProcessOptions {
  /** 0 (default): a free port. */
  readonly port?: number;
  /** Private JWK Set of the signing keys (made when missing); default .local/idp/jwks.json. */
  readonly keysFile?: string;
  readonly idTokenTtlSeconds?: number;
  /** The signing clients' signRequest keys (made when missing); default .local/idp/client-keys. */
  readonly clientKeysDir?: string;
  /** The child's stderr, line by line (default: kept only for the error when it fails to start). */
  readonly log?: (line: string) => void;
  readonly startupTimeoutMs?: number;
}

export interface IdpProcess {
  /** http://127.0.0.1:<port> */
  readonly issuer: string;
  /** From the IdP's discovery document. */
  readonly jwksUri: string;
  readonly port: number;
  readonly child: ChildProcess;
  /** SIGTERM, then SIGKILL after 5 s; resolves once the process has exited. */
  stop(): Promise<void>;
}

export class IdpStartError extends Error {
  public override readonly name = 'IdpStartError';
}

const MAIN = join(__dirname, 'main.ts');
const STDERR_LINES_KEPT = 20;

export async function startIdpProcess(options: IdpProcessOptions = {}): Promise<IdpProcess> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    IDP_PORT: String(options.port ?? 0),
    IDP_KEYS_FILE: options.keysFile ?? DEFAULT_KEYS_FILE,
    IDP_EXIT_ON_STDIN_CLOSE: '1',
    ...(options.clientKeysDir === undefined ? {} : { IDP_CLIENT_KEYS_DIR: options.clientKeysDir }),
    ...(options.idTokenTtlSeconds === undefined
      ? {}
      : { IDP_ID_TOKEN_TTL_SECONDS: String(options.idTokenTtlSeconds) }),
  };
  // tsx's loader inside this node binary (not the tsx launcher, which would fork a second process).
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
    env,
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const recent: string[] = [];
  createInterface({ input: child.stderr! }).on('line', (line) => {
    recent.push(line);
    if (recent.length > STDERR_LINES_KEPT) recent.shift();
    options.log?.(line);
  });

  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };

  const timeoutMs = options.startupTimeoutMs ?? 30_000;
  let timer: NodeJS.Timeout | undefined;
  try {
    const port = await new Promise<number>((done, fail) => {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const listening = /^listening (\d+)$/.exec(line);
        if (listening) done(Number(listening[1]));
        else options.log?.(line);
      });
      child.once('error', (err) =>
        fail(new IdpStartError(`the local IdP could not be started: ${err.message}`)),
      );
      void exited.then(() =>
        fail(
          new IdpStartError(
            `the local IdP exited (code ${child.exitCode}, signal ${child.signalCode}) before it listened` +
              (recent.length ? `:\n${recent.join('\n')}` : ''),
          ),
        ),
      );
      timer = setTimeout(
        () => fail(new IdpStartError(`the local IdP did not listen within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    const issuer = `http://127.0.0.1:${port}`;
    const discovery = await fetch(`${issuer}/.well-known/openid-configuration`);
    if (!discovery.ok) throw new IdpStartError(`the local IdP's discovery answered HTTP ${discovery.status}`);
    const { jwks_uri: jwksUri } = (await discovery.json()) as { jwks_uri: string };
    return { issuer, jwksUri, port, child, stop };
  } catch (err) {
    await stop();
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Adds a fresh signing key of each type to the keys file; a running IdP is not affected, the next start
 * signs with the new keys and still publishes the old ones. Returns the new kids.
 */
export function rotateIdpKeys(
  keysFile: string = DEFAULT_KEYS_FILE,
  types?: readonly SigningKeyType[],
): Promise<string[]> {
  return rotateSigningKeys(keysFile, types);
}
