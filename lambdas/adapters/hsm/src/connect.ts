import type { AwsConfig, HsmConfig } from '@pipeline/config';
import { resolvePin } from '@pipeline/adapters/parameters';
import { Pkcs11Hsm } from './pkcs11-hsm';

/** Connects to the configured HSM: resolves the PIN from its source, then initialises and logs in. */
export async function connectHsm(hsm: HsmConfig, aws?: AwsConfig): Promise<Pkcs11Hsm> {
  const pin = await resolvePin(hsm.pinSource, aws);
  return Pkcs11Hsm.connect({
    modulePath: hsm.modulePath,
    tokenLabel: hsm.tokenLabel,
    profile: hsm.profile,
    sessionPoolSize: hsm.sessionPoolSize,
    pin,
  });
}
