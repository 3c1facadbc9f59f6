/**
 * Creates the local SoftHSM token and the long-lived objects the service needs on it. Idempotent: a
 * second run finds everything in place and changes nothing. Run by scripts/bootstrap.sh.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { loadConfig, type HsmConfig, loadCaConfig, loadAuditConfig } from '@pipeline/config';
import { resolvePin, fileCaCertificateStore } from '@pipeline/adapters/parameters';
import { connectHsm, type Hsm, type Pkcs11Hsm } from '@pipeline/adapters/hsm';
import { HsmLoginError, HsmTokenNotFoundError } from '@pipeline/core/shared';
import { provisionWrappingKey } from '@pipeline/adapters/hsm/provisioning';
import { bootstrapCaHierarchy } from '@pipeline/ca';
import { provisionAuditKey } from '@pipeline/audit';
import { LOCAL_DIR } from './paths';
import { localToken, useLocalHsmEnv, type LocalToken } from './token';

/**
 * Long-lived token objects, each created if missing: the pool wrapping key (made before, by the security
 * officer: provisionWrappingKey; here only found), the CA hierarchy (root, issuing CA, OCSP responder, TSA)
 * and the audit checkpoint key, so one command provisions a complete local HSM.
 */
export type Provisioner = (hsm: Hsm, config: HsmConfig) => Promise<string | undefined>;

export const PROVISIONERS: Provisioner[] = [
  async (hsm, config) =>
    (await hsm.ensureWrappingKey(config.wrapKeyLabel))
      ? `created wrapping key ${config.wrapKeyLabel}`
      : undefined,
  // The CA hierarchy: root and issuing CA key pairs on the token, the OCSP responder's and the TSA's each on
  // its own token,
  // their certificates in .local/ca/.
  async (hsm, config) => {
    const ca = loadCaConfig({ CA_CERTS_SOURCE: `file:${LOCAL_DIR}/ca`, ...process.env });
    const dir = ca.certsSource.kind === 'file' ? ca.certsSource.dir : `${LOCAL_DIR}/ca`;
    const ocspHsm = await connect({ ...config, tokenLabel: ca.ocspTokenLabel, pinSource: ca.ocspPinSource });
    const tsaHsm = await connect({ ...config, tokenLabel: ca.tsaTokenLabel, pinSource: ca.tsaPinSource });
    try {
      const { changes } = await bootstrapCaHierarchy(hsm, ca, fileCaCertificateStore(dir), {
        ocspHsm,
        tsaHsm,
      });
      return changes.length > 0 ? changes.join('; ') : undefined;
    } finally {
      await ocspHsm.close();
      await tsaHsm.close();
    }
  },
  // The audit checkpoint key (EC P-384, non-extractable); its public key in .local/audit/ for verifiers.
  async (hsm) =>
    provisionAuditKey(hsm, loadAuditConfig(process.env).keyLabel, `${LOCAL_DIR}/audit/audit-key.pem`),
];

function log(message: string): void {
  console.error(`[bootstrap] ${message}`);
}

function pinFromFile(file: string, fromEnv: string | undefined): string {
  if (fromEnv) return fromEnv;
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const pin = randomBytes(12).toString('hex');
  writeFileSync(file, `${pin}\n`, { mode: 0o600 });
  return pin;
}

function softhsmUtil(token: LocalToken, args: string[]): void {
  execFileSync('softhsm2-util', args, {
    env: { ...process.env, SOFTHSM2_CONF: token.confPath },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
}

function initToken(token: LocalToken, soPin: string, userPin: string, label = token.label): void {
  log(`creating SoftHSM token "${label}" in ${token.tokenDir}`);
  softhsmUtil(token, ['--init-token', '--free', '--label', label, '--so-pin', soPin, '--pin', userPin]);
}

/** A service's own token (OCSP responder, TSA): created when missing, re-created when its PIN changed. */
async function ensureServiceToken(
  token: LocalToken,
  soPin: string,
  config: HsmConfig,
  service: { label: string; pinFile: string; pinSource: HsmConfig['pinSource'] },
): Promise<void> {
  const userPin = pinFromFile(service.pinFile, undefined);
  try {
    await (await connect({ ...config, tokenLabel: service.label, pinSource: service.pinSource })).close();
  } catch (err) {
    if (err instanceof HsmLoginError) softhsmUtil(token, ['--delete-token', '--token', service.label]);
    else if (!(err instanceof HsmTokenNotFoundError)) throw err;
    initToken(token, soPin, userPin, service.label);
  }
}

/**
 * Token directories whose `token.object` is empty: SoftHSM rewrites that file on every login, and a process
 * killed during the write leaves it so. Such a token cannot be loaded (its keys are lost with it); it is
 * moved aside, named, so the set-up can create a fresh one instead of failing later with a bare
 * "token not found".
 */
export function moveAsideTruncatedTokens(token: Pick<LocalToken, 'dir' | 'tokenDir'>): string[] {
  const moved: string[] = [];
  for (const entry of readdirSync(token.tokenDir, { withFileTypes: true })) {
    const file = join(token.tokenDir, entry.name, 'token.object');
    if (!entry.isDirectory() || !existsSync(file) || statSync(file).size > 0) continue;
    const aside = join(token.dir, `broken-${entry.name}-${Date.now()}`);
    renameSync(join(token.tokenDir, entry.name), aside);
    moved.push(aside);
    log(
      `token directory ${entry.name} is unusable (token.object is empty: a process was killed while logging in); moved it to ${aside}`,
    );
  }
  return moved;
}

function connect(config: HsmConfig): Promise<Pkcs11Hsm> {
  return connectHsm({ ...config, sessionPoolSize: 1 });
}

export async function setupToken(): Promise<void> {
  const token = localToken();
  mkdirSync(token.tokenDir, { recursive: true, mode: 0o700 });
  writeFileSync(
    token.confPath,
    `directories.tokendir = ${token.tokenDir}\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n`,
  );
  moveAsideTruncatedTokens(token);
  useLocalHsmEnv();
  const userPin = pinFromFile(token.userPinFile, process.env.HSM_PIN);
  const soPin = pinFromFile(token.soPinFile, process.env.HSM_SO_PIN);
  const config = loadConfig(process.env).hsm;
  const ca = loadCaConfig(process.env);
  await ensureServiceToken(token, soPin, config, {
    label: ca.ocspTokenLabel,
    pinFile: token.ocspUserPinFile,
    pinSource: ca.ocspPinSource,
  });
  await ensureServiceToken(token, soPin, config, {
    label: ca.tsaTokenLabel,
    pinFile: token.tsaUserPinFile,
    pinSource: ca.tsaPinSource,
  });

  let hsm: Pkcs11Hsm;
  try {
    hsm = await connect(config);
  } catch (err) {
    if (err instanceof HsmTokenNotFoundError) {
      initToken(token, soPin, userPin);
    } else if (err instanceof HsmLoginError) {
      // Only ever the local, git-ignored token: its PIN changed (e.g. HSM_PIN was set), so start afresh.
      log(`the local token "${token.label}" does not accept the configured PIN: re-creating it`);
      softhsmUtil(token, ['--delete-token', '--token', token.label]);
      initToken(token, soPin, userPin);
    } else {
      throw err;
    }
    hsm = await connect(config);
  }
  // The security officer's login needs a process where nobody else is logged in.
  await hsm.close();
  const wrapKey = await provisionWrappingKey(
    { ...config, pin: await resolvePin(config.pinSource), soPin },
    config.wrapKeyLabel,
  );
  if (wrapKey.change === 'created') {
    log(`created wrapping key ${config.wrapKeyLabel} (trusted, made by the security officer)`);
  } else if (wrapKey.change === 'replaced') {
    log(
      `replaced wrapping key ${config.wrapKeyLabel}: the old one was not trusted and is destroyed; pool keys wrapped under it no longer unwrap and are discarded when claimed`,
    );
  }
  hsm = await connect(config);
  try {
    for (const provision of PROVISIONERS) {
      const done = await provision(hsm, config);
      if (done) log(done);
    }
  } finally {
    await hsm.close();
  }
}

if (require.main === module) {
  setupToken().catch((err: Error) => {
    log(`token set-up failed: ${err.name}: ${err.message}`);
    process.exit(1);
  });
}
