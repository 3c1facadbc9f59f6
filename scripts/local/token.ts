import { join } from 'node:path';
import { LOCAL_DIR } from './paths';

/**
 * The local SoftHSM token: its own SOFTHSM2_CONF and token directory under .local/ (never the system-wide
 * token directory), label and PINs from the environment, else PINs generated once and kept in 0600 files.
 */
export interface LocalToken {
  readonly dir: string;
  readonly confPath: string;
  readonly tokenDir: string;
  readonly label: string;
  readonly userPinFile: string;
  readonly soPinFile: string;
  /**
   * The OCSP responder's token: SoftHSM has one user per token, so the responder's key lives on a token
   * of its own with its own PIN, and the responder's login reaches nothing else.
   */
  readonly ocspLabel: string;
  readonly ocspUserPinFile: string;
  /** The time-stamping authority's token, for the same reason. */
  readonly tsaLabel: string;
  readonly tsaUserPinFile: string;
}

export function localToken(env: NodeJS.ProcessEnv = process.env): LocalToken {
  const dir = join(LOCAL_DIR, 'softhsm');
  return {
    dir,
    confPath: join(dir, 'softhsm2.conf'),
    tokenDir: join(dir, 'tokens'),
    label: env.HSM_TOKEN_LABEL || 'signing-pipeline',
    userPinFile: join(dir, 'user.pin'),
    soPinFile: join(dir, 'so.pin'),
    ocspLabel: env.OCSP_HSM_TOKEN_LABEL || 'signing-pipeline-ocsp',
    ocspUserPinFile: join(dir, 'ocsp-user.pin'),
    tsaLabel: env.TSA_HSM_TOKEN_LABEL || 'signing-pipeline-tsa',
    tsaUserPinFile: join(dir, 'tsa-user.pin'),
  };
}

/**
 * Environment that points the handlers' configuration at the local token. Values already set win, so a
 * developer (or a test that wants a known PIN in HSM_PIN) can override any of them.
 */
export function localHsmEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const token = localToken(env);
  return {
    SOFTHSM2_CONF: env.SOFTHSM2_CONF || token.confPath,
    HSM_PROFILE: env.HSM_PROFILE || 'softhsm',
    HSM_MODULE_PATH: env.HSM_MODULE_PATH || '/usr/lib/softhsm/libsofthsm2.so',
    HSM_TOKEN_LABEL: token.label,
    HSM_PIN_SOURCE: env.HSM_PIN_SOURCE || (env.HSM_PIN ? 'env:HSM_PIN' : `file:${token.userPinFile}`),
    OCSP_HSM_TOKEN_LABEL: token.ocspLabel,
    OCSP_HSM_PIN_SOURCE: env.OCSP_HSM_PIN_SOURCE || `file:${token.ocspUserPinFile}`,
    TSA_HSM_TOKEN_LABEL: token.tsaLabel,
    TSA_HSM_PIN_SOURCE: env.TSA_HSM_PIN_SOURCE || `file:${token.tsaUserPinFile}`,
  };
}

/** Applies localHsmEnv() to this process (before the HSM module is loaded: SoftHSM reads it at init). */
export function useLocalHsmEnv(): void {
  Object.assign(process.env, localHsmEnv());
}
