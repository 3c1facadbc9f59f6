/**
 * The HSM connection of an execution environment, for the functions that use the pool user's login
 * (signer, keygen, checkpointer). Kept apart from wiring.ts so that functions without HSM work (the API)
 * never load pkcs11js and need no CloudHSM layer.
 */
import { connectHsm, type Hsm } from '@pipeline/adapters/hsm';
import { onceUntilFailure } from './once';
import { wire } from './wiring';

let decorate: (hsm: Hsm) => Hsm = (connected) => connected;

/**
 * Wraps this process's HSM before its first use: the seam the local runner installs fault injection
 * through (its consumer and runner processes). Deployed functions never call it.
 */
export function decorateSharedHsm(decorator: (hsm: Hsm) => Hsm): void {
  decorate = decorator;
}

/** One HSM login per execution environment; a failed connect is retried on the next invocation. */
export const sharedHsm = onceUntilFailure(async () => {
  const { config } = wire();
  return decorate(await connectHsm(config.hsm, config.aws));
});
