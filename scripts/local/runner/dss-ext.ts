/**
 * The DSS-Ext door locally (LOCAL_DSSEXT=1, as `npm start` sets): the service key, a federation operator
 * key and a registered test e-service's key (RSA, made once in .local/dss-ext), the local SAML IdP for the
 * test citizens (scripts/local/saml-idp) trusting the door's SP metadata, and the federation metadata
 * naming it, signed by the operator. Sets the DSSEXT_* variables the door, the API and the CA read
 * (docs/configuration.md); variables already set are kept (a test registers its own e-service).
 */
import { createServer } from 'node:net';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pemXmlSigner, spMetadataXml } from '@pipeline/adapters/saml';
import { DSSEXT_BASE_PATH } from '@pipeline/resources';
import { signXml } from '@pipeline/xml';
import { LOCAL_DIR } from '../paths';
import { startSamlIdp, type SamlIdp } from '../saml-idp/idp';
import { loadOrCreateKeyPair, type KeyPair } from '../saml-idp/keys';

type Env = Record<string, string>;

export interface LocalDssExt {
  /** The door's base URL (`.../dss/v1`): POST /sign takes the e-services' SignRequests. */
  readonly url: string;
  readonly signServiceEntityId: string;
  readonly spMetadataUrl: string;
  /** The local SAML IdP for the test citizens. */
  readonly idp: SamlIdp;
  /** The service key's certificate (PEM): SignResponses verify with it. */
  readonly serviceCertPem: string;
  /** The registered test e-service (unless DSSEXT_CLIENTS was given). */
  readonly eservice: {
    readonly entityId: string;
    readonly key: KeyPair;
    readonly returnUrls: readonly string[];
  };
}

/** The e-service `npm start` registers: its SignRequester entityID and return URL (the demo page's). */
const LOCAL_ESERVICE = 'http://127.0.0.1/local-eservice';

/** A free loopback port for the gateway, when the door's URLs must be known before it listens. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function setUpDssExt(
  env: Env,
  port: number,
  cleanups: (() => Promise<void>)[],
  log: (line: string) => void,
  moreIdentityProviders: (spMetadataXml: string) => Promise<readonly string[]> = async () => [],
): Promise<LocalDssExt> {
  const dir = join(LOCAL_DIR, 'dss-ext');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const service = loadOrCreateKeyPair(join(dir, 'service'), 'Local DSS-Ext signature service');
  const operator = loadOrCreateKeyPair(join(dir, 'operator'), 'Local federation operator');
  const eservice = loadOrCreateKeyPair(join(dir, 'eservice'), 'Local test e-service');
  const url = `http://127.0.0.1:${port}${DSSEXT_BASE_PATH}`;
  env.DSSEXT_BASE_URL ||= url;
  env.DSSEXT_SIGN_SERVICE_ENTITY_ID ||= `${url}/sign-service`;
  const sp = { entityId: env.DSSEXT_SP_ENTITY_ID || `${url}/saml/sp`, acsUrl: `${url}/saml/acs` };
  const signer = pemXmlSigner(service.keyPem + service.certPem);
  const spMetadata = spMetadataXml({ ...sp, signingCertificateDer: signer.certificates[0]! });
  const idp = await startSamlIdp({
    keys: loadOrCreateKeyPair(join(dir, 'idp'), 'Local SAML IdP (test citizens only)'),
    spMetadata: [spMetadata],
    port: Number(env.LOCAL_SAML_IDP_PORT ?? 0),
    testKnobs: env.LOCAL_SAML_IDP_TEST_KNOBS === '1',
    log: (line) => log(`[saml-idp] ${line}`),
  });
  cleanups.push(() => idp.close());
  const federation = join(dir, `federation-${port}.xml`);
  const others = await moreIdentityProviders(spMetadata);
  writeFileSync(federation, await federationMetadata([idp.metadataXml, ...others, spMetadata], operator));
  writeFileSync(join(dir, 'service-key.pem'), service.keyPem + service.certPem, { mode: 0o600 });
  env.DSSEXT_FEDERATION_METADATA ||= `file:${federation}`;
  env.DSSEXT_METADATA_TRUST ||= operator.certPem;
  env.DSSEXT_SERVICE_KEY ||= `file:${join(dir, 'service-key.pem')}`;
  const returnUrls = (
    env.LOCAL_DSSEXT_RETURN_URLS || `http://127.0.0.1:${env.LOCAL_DEMO_PORT ?? 8082}/dss/response`
  )
    .split(',')
    .map((u) => u.trim());
  env.DSSEXT_CLIENTS ||= JSON.stringify([
    { entityId: LOCAL_ESERVICE, certificates: [eservice.certPem], returnUrls, certTypes: ['PKC', 'QC/SSCD'] },
  ]);
  return {
    url,
    signServiceEntityId: env.DSSEXT_SIGN_SERVICE_ENTITY_ID,
    spMetadataUrl: `${url}/saml/metadata`,
    idp,
    serviceCertPem: service.certPem,
    eservice: { entityId: LOCAL_ESERVICE, key: eservice, returnUrls },
  };
}

/** An md:EntitiesDescriptor of the entities, signed (enveloped, by its ID) with the operator's key. */
async function federationMetadata(entities: readonly string[], operator: KeyPair): Promise<string> {
  const body = entities.map((xml) => xml.replace(/^<\?xml[^>]*\?>\s*/, '').trim()).join('');
  const xml = `<md:EntitiesDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" ID="_local-federation" Name="local">${body}</md:EntitiesDescriptor>`;
  return signXml(xml, pemXmlSigner(operator.keyPem + operator.certPem), {
    referenceId: '_local-federation',
    location: { xpath: '/*', action: 'prepend' },
  });
}
