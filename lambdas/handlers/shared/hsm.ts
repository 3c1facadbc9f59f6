/**
 * The HSM connection of an execution environment, for the functions that use the HSM (signer, keygen).
 * Kept apart from wiring.ts so that functions without HSM work (the API) never load pkcs11js and need
 * no CloudHSM layer.
 */
import { connectHsm, type Hsm } from '@pipeline/adapters/hsm';
import { wire } from './wiring';

let hsm: Promise<Hsm> | undefined;
let decorate: (hsm: Hsm) => Hsm = (connected) => connected;

/**
 * Wraps this process's HSM before its first use: the seam the local runner installs fault injection
 * through (its consumer and runner processes). Deployed functions never call it.
 */
export function decorateSharedHsm(decorator: (hsm: Hsm) => Hsm): void {
  decorate = decorator;
}

/** One HSM login per execution environment; a failed connect is retried on the next invocation. */
export function sharedHsm(): Promise<Hsm> {
  if (!hsm) {
    const { config } = wire();
    hsm = connectHsm(config.hsm, config.aws).then(
      (connected) => decorate(connected),
      (err: unknown) => {
        hsm = undefined;
        throw err;
      },
    );
  }
  return hsm;
}
