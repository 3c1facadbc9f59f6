import * as pkcs11js from 'pkcs11js';
import { toHsmError } from './errors';

/**
 * One loaded and initialised PKCS#11 module per path and process: Cryptoki is process-global state, so
 * every adapter instance in the process shares it and the last one to close finalises it.
 */
interface LoadedModule {
  readonly pkcs11: pkcs11js.PKCS11;
  users: number;
}

const modules = new Map<string, LoadedModule>();

export function acquireModule(modulePath: string): pkcs11js.PKCS11 {
  const loaded = modules.get(modulePath);
  if (loaded) {
    loaded.users++;
    return loaded.pkcs11;
  }
  const pkcs11 = new pkcs11js.PKCS11();
  try {
    pkcs11.load(modulePath);
  } catch (err) {
    throw toHsmError(err, `load PKCS#11 module ${modulePath}`);
  }
  initialize(pkcs11);
  modules.set(modulePath, { pkcs11, users: 1 });
  return pkcs11;
}

/** Initialises with OS locking (the async API runs calls on libuv threads); tolerates a prior init. */
export function initialize(pkcs11: pkcs11js.PKCS11): void {
  try {
    pkcs11.C_Initialize({ flags: pkcs11js.CKF_OS_LOCKING_OK });
  } catch (err) {
    if ((err as { code?: number }).code !== pkcs11js.CKR_CRYPTOKI_ALREADY_INITIALIZED) {
      throw toHsmError(err, 'initialize');
    }
  }
}

export function releaseModule(modulePath: string): void {
  const loaded = modules.get(modulePath);
  if (!loaded || --loaded.users > 0) return;
  modules.delete(modulePath);
  try {
    loaded.pkcs11.C_Finalize();
  } catch {
    // already finalised: nothing left to release
  }
}
