/**
 * The HSM connection of an execution environment, for the functions that use the HSM (signer, keygen).
 * Kept apart from wiring.ts so that functions without HSM work (the API) never load pkcs11js and need
 * no CloudHSM layer.
 */
import { connectHsm, maybeWithFaults, type Hsm } from '../../adapters/hsm/src';
import { wire } from './wiring';

let hsm: Promise<Hsm> | undefined;

/** One HSM login per execution environment; a failed connect is retried on the next invocation. */
export function sharedHsm(): Promise<Hsm> {
  if (!hsm) {
    const { config } = wire();
    hsm = connectHsm(config.hsm, config.aws).then(
      // Fault injection is off unless HSM_FAULT_RATE is set (tests of the defences set it).
      (connected) => maybeWithFaults(connected, process.env),
      (err: unknown) => {
        hsm = undefined;
        throw err;
      },
    );
  }
  return hsm;
}
