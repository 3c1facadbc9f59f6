/**
 * The local SAML IdP (./idp.ts) as a process of its own, on loopback only:
 *
 *   node --import tsx scripts/local/saml-idp/main.ts
 *
 * Prints exactly `listening <port>` on stdout once it answers (everything else goes to stderr) and stops
 * on SIGTERM or SIGINT. Entity ID http://127.0.0.1:<port>/saml/idp, metadata at /saml/idp/metadata.
 *
 * Environment:
 *   SAML_IDP_PORT          TCP port on 127.0.0.1; 0 (default) picks a free one
 *   SAML_IDP_DIR           its key.pem (0600) and self-signed cert.pem (RSA 2048), made when missing;
 *                          default .local/saml-idp under the repository root
 *   SAML_IDP_SP_METADATA   file path(s) of the metadata of the SPs it trusts, separated by the path
 *                          delimiter (':')
 * The test knobs are not reachable from here: tests start the IdP in-process (startSamlIdp).
 */
import { readFileSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { LOCAL_DIR } from '../paths';
import { startSamlIdp } from './idp';
import { loadOrCreateKeyPair } from './keys';

const log = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

async function main(): Promise<void> {
  const rawPort = process.env.SAML_IDP_PORT || '0';
  const port = Number(rawPort);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`SAML_IDP_PORT must be an integer from 0 to 65535, not ${JSON.stringify(rawPort)}`);
  }
  const dir = resolve(process.env.SAML_IDP_DIR || join(LOCAL_DIR, 'saml-idp'));
  const keys = loadOrCreateKeyPair(dir, 'Local SAML IdP (test citizens only)');
  const files = (process.env.SAML_IDP_SP_METADATA ?? '').split(delimiter).filter((f) => f !== '');
  const idp = await startSamlIdp({ port, keys, spMetadata: files.map((f) => readFileSync(f, 'utf8')), log });
  log(`local SAML IdP ${idp.entityId} (key ${dir}, ${files.length} trusted SP(s))`);
  process.stdout.write(`listening ${idp.port}\n`);
  let stopping = false;
  const shutdown = (): void => {
    if (stopping) return;
    stopping = true;
    void idp.close().then(() => process.exit(0));
    setTimeout(() => process.exit(0), 3_000).unref();
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}

main().catch((err: Error) => {
  log(`local SAML IdP failed to start: ${err.name}: ${err.message}`);
  process.exit(1);
});
