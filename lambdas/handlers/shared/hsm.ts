/**
 * The HSM connection of an execution environment, for the functions that use the pool user's login
 * (signer, keygen, checkpointer). Kept apart from wiring.ts so that functions without HSM work (the API)
 * never load pkcs11js and need no CloudHSM layer.
 */
import { connectHsm, type Hsm } from '@pipeline/adapters/hsm';
import type { AppConfig } from '@pipeline/config';
import { onceUntilFailure, type Once } from './once';

let decorate: (hsm: Hsm) => Hsm = (connected) => connected;

/**
 * Wraps this process's HSM before its first use: the seam the local runner installs fault injection
 * through (its consumer and runner processes). Deployed functions never call it.
 */
export function decorateSharedHsm(decorator: (hsm: Hsm) => Hsm): void {
  decorate = decorator;
}

let login: Once<Hsm> | undefined;

/**
 * One HSM login per process, made with the configuration of its first caller (the functions a process
 * hosts share the pool user's login: its sessions, not one login each); a failed connect is retried on
 * the next invocation.
 */
export function sharedHsm(config: Pick<AppConfig, 'hsm' | 'aws'>): Promise<Hsm> {
  login ??= onceUntilFailure(async () => decorate(await connectHsm(config.hsm, config.aws)));
  return login();
}
