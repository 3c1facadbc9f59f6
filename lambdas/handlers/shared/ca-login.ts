/**
 * How a CA-side function (CA, TSA, OCSP responder) starts: it logs in as its own crypto user (whose PIN
 * and token may differ from the signer's, so the other functions' keys are out of its reach) and reads
 * the CA certificates. Without them (none stored, or the store unreachable) there is nothing to sign
 * for: the login is closed again and the set-up fails, to be tried again on the next invocation.
 */
import { connectHsm, type Hsm } from '@pipeline/adapters/hsm';
import { caCertificateStore } from '@pipeline/adapters/parameters';
import type { CaCertificates } from '@pipeline/core/pki';
import type { AppConfig, AwsConfig, CaConfig, CaSideFunctionConfig, PinSource } from '@pipeline/config';

export interface CaSideLogin {
  readonly hsm: Hsm;
  readonly caCertificates: CaCertificates;
  readonly config: CaConfig;
  readonly aws: AwsConfig;
  readonly app: AppConfig;
}

let decorate: (hsm: Hsm, tokenLabel: string | undefined) => Hsm = (connected) => connected;

/**
 * Wraps the CA-side logins of this process (given the token each logs in to) before their first use: the
 * seam the local end-to-end tests count the OCSP responder's HSM signatures through. Deployed functions
 * never call it.
 */
export function decorateCaSideHsm(decorator: (hsm: Hsm, tokenLabel: string | undefined) => Hsm): void {
  decorate = decorator;
}

export async function caSideLogin(
  { app, ca: config }: Pick<CaSideFunctionConfig, 'app' | 'ca'>,
  user: (config: CaConfig) => { readonly pinSource: PinSource; readonly tokenLabel?: string },
): Promise<CaSideLogin> {
  const { hsm: hsmConfig, aws } = app;
  const login = { ...hsmConfig, ...user(config) };
  const hsm = decorate(await connectHsm(login, aws), login.tokenLabel);
  try {
    const caCertificates = await caCertificateStore(config.certsSource, aws).read();
    if (!caCertificates) throw new Error(`no CA certificates in ${config.certsSource.kind}`);
    return { hsm, caCertificates, config, aws, app };
  } catch (err) {
    await hsm.close().catch(() => undefined);
    throw err;
  }
}
