/**
 * What the PKI functions (CRL publication, OCSP) share per execution environment: the CA crypto user's
 * HSM login, the certificate records, the CA certificates and the signers over them.
 */
import { documentClient } from '@pipeline/adapters/aws';
import { CertificateRepository } from '@pipeline/adapters/dynamodb';
import { connectHsm, type Hsm } from '@pipeline/adapters/hsm';
import { pkiPublisher } from '@pipeline/adapters/publish';
import { RevocationAuthority, caCertificateStore, type CaCertificateStore } from '@pipeline/ca';
import { loadCaConfig, loadConfig, type AwsConfig, type CaConfig } from '@pipeline/config';
import type { PkiPublisher } from '@pipeline/core';
import { TABLES, tableName } from '@pipeline/resources';
import { onceUntilFailure, type Once } from './once';

export interface PkiContext {
  readonly config: CaConfig;
  readonly aws: AwsConfig;
  readonly hsm: Hsm;
  readonly certificates: CertificateRepository;
  readonly certificateStore: CaCertificateStore;
  readonly publisher: PkiPublisher;
  /**
   * Signers over the CA certificates as last read; `authority.forget()` makes the next call read the CA
   * certificates again (after maintenance changed them).
   */
  readonly authority: Once<RevocationAuthority>;
}

async function setUp(): Promise<PkiContext> {
  const { hsm: hsmConfig, aws } = loadConfig();
  const config = loadCaConfig();
  // The CA keys (root, issuing, OCSP responder) belong to the CA's crypto user.
  const hsm = await connectHsm({ ...hsmConfig, pinSource: config.pinSource }, aws);
  const certificates = new CertificateRepository(documentClient(aws), {
    tableName: tableName(TABLES.certificates),
  });
  const certificateStore = caCertificateStore(config.certsSource, aws);
  const target = config.publishTarget;
  const publisher = pkiPublisher(target, aws);
  const authority = onceUntilFailure(async () => {
    const caCertificates = await certificateStore.read();
    if (!caCertificates) throw new Error(`no CA certificates in ${certificateStore.location}`);
    return RevocationAuthority.create({ hsm, store: certificates, caCertificates, config });
  });
  return { config, aws, hsm, certificates, certificateStore, publisher, authority };
}

/** Once per environment; a failed set-up is tried again on the next invocation. */
export const sharedPki = onceUntilFailure(setUp);
