/**
 * DSS-Ext sign tasks through the signing core with SAML evidence, against DynamoDB Local, the SoftHSM
 * token, the real CSR builder and the real CA, whose evidence verifier checks the e-service's SignRequest
 * (signed by xmlsec1 for a spec-written e-service) and the identity provider's assertion (signed by
 * xmlsec1). Three tasks (XAdES BES, CAdES BES, PAdES BES) under one certificate naming the person the
 * assertion names, with the SAML AuthContext; the e-service assembles its three signatures and xmlsec1,
 * openssl and EU DSS judge them. Every forgery a table writer or an attacker at the door could try is
 * refused by the signer or the CA.
 */
import { createHash, randomUUID, X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildCsr, pemToDer } from '@pipeline/der';
import { loadConfig } from '@pipeline/config';
import {
  DssEvidenceVerifier,
  readFederationMetadata,
  type IdentityProviderEntry,
} from '@pipeline/adapters/saml';
import {
  assertionNonce,
  authnRequestId,
  encodeDssEvidence,
  EvidenceVerifier,
  SIGN_MESSAGE_DIGEST_ATTRIBUTE,
} from '@pipeline/core/identity';
import { InMemoryPoolMetrics, fillPool } from '@pipeline/core/pool';
import {
  processSignRequest,
  signTaskDigest,
  type SignRequestRecord,
  type SigningDeps,
} from '@pipeline/core/signing';
import {
  pipelineRequestOf,
  prepareSignTask,
  readSignRequest,
  taskDocuments,
  type DssClientRegistration,
  type DssServiceContext,
} from '@pipeline/dss';
import { AuditLog } from '@pipeline/audit';
import { createTestSigningStack, type TestSigningStack } from '../../../scripts/local/signing-stack';
import { createLocalCa } from '../../../scripts/local/local-ca';
import { directAssertionVerifier } from '../../../scripts/local/idp/direct-assertions';
import { sampleSignRequestRecord } from '../../../scripts/local/sample-sign-request';
import { opensslCmsVerify } from '../../../scripts/local/verify/openssl';
import { validatePdfSignatures, type PdfValidationReport } from '../../../scripts/local/verify/pdf-validator';
import type { PreparedPdf } from '../../../scripts/client/src/pdf-signature';
import {
  assembleCms,
  assembleXades,
  CMS_ATTRIBUTES,
  CONTENT,
  preparedPdf,
  SIGNED_INFO,
} from '../../../scripts/local/dss-eservice/tasks';
import { parseSamlAuthContext, readAuthContextExtension } from '../../../scripts/local/verify/auth-context';
import {
  signRequest,
  signRequestTemplate,
  type EServiceRequest,
} from '../../../scripts/local/dss-eservice/sign-request';
import {
  signedFederationMetadata,
  makeTestKey,
  samlAssertionXml,
  testKeyDirectory,
  xmlsec1SignById,
  xmlsec1Verifies,
} from '../../test-support/saml-evidence';

const config = loadConfig(process.env);
const keys = testKeyDirectory();
const eservice = makeTestKey(keys.dir, 'eservice');
const stranger = makeTestKey(keys.dir, 'stranger');
const idpKey = makeTestKey(keys.dir, 'idp');
const operator = makeTestKey(keys.dir, 'operator');
const IDP = 'https://idp.example/saml';
const SP = { entityId: 'https://sign.example/sp', acsUrl: 'https://sign.example/dss/v1/saml/acs' };
const PNR = 'urn:oid:1.2.752.29.4.13';
const PERSON = { pnr: '195207092072', given: 'Tove', sn: 'Tester' };
const MESSAGE = 'I sign the lease of flat 12.';

const REGISTRATION: DssClientRegistration = {
  entityId: 'https://eservice.example/sp',
  certificates: [eservice.certificate],
  returnUrls: ['https://eservice.example/response'],
  acceptedLoa: [],
  certTypes: ['PKC'],
  includeAssertion: false,
};
const SERVICE: Omit<DssServiceContext, 'now'> = {
  signServiceEntityId: 'https://sign.example/signservice',
  registrations: [REGISTRATION],
  maxRequestAgeMs: 180_000,
  clockSkewMs: 60_000,
  maxTasks: 50,
};
const FEDERATION: ReadonlyMap<string, IdentityProviderEntry> = readFederationMetadata(
  signedFederationMetadata(keys.dir, IDP, idpKey, operator),
  [operator.certificate],
);

const dssVerifier = new DssEvidenceVerifier({
  service: SERVICE,
  identityProviders: async () => FEDERATION,
  sp: SP,
  defaultLoa: ['http://id.elegnamnden.se/loa/1.0/loa3'],
  maxAuthAgeSeconds: 600,
});
let stack: TestSigningStack;
let signing: SigningDeps;

beforeAll(async () => {
  ({ pdf: PDF, attributes: PDF_ATTRIBUTES } = await preparedPdf());
  stack = await createTestSigningStack({ poolShards: 2 });
  const audit = new AuditLog(stack.auditStore, { chains: 2 });
  const { issuer } = await createLocalCa({
    hsm: stack.hsm,
    doc: stack.doc,
    certificatesTable: stack.tables.certificates,
    audit,
    evidence: new EvidenceVerifier(directAssertionVerifier(), dssVerifier),
  });
  signing = {
    requests: stack.requests,
    pool: stack.pool,
    hsm: stack.hsm,
    buildCsr,
    issuer,
    audit,
    prepareTask: prepareSignTask,
    metrics: new InMemoryPoolMetrics(),
    sleep: async () => undefined,
    settings: {
      emptyPoolPolicy: 'reject',
      retryAfterSeconds: 30,
      leaseMs: 30_000,
      hsmProfile: config.hsm.profile,
    },
  };
  const filled = await fillPool(
    { hsm: stack.hsm, pool: stack.pool, metrics: new InMemoryPoolMetrics() },
    {
      keyType: 'EC-P256',
      count: 10,
      parallelism: 2,
      deadline: Date.now() + 60_000,
      wrapKeyLabel: config.hsm.wrapKeyLabel,
      hsmProfile: config.hsm.profile,
      maxAgeSeconds: 3600,
    },
  );
  expect(filled.stored).toBe(10);
});

afterAll(async () => {
  await stack?.close();
  keys.remove();
});

const SIGNED_ATTRIBUTES = CMS_ATTRIBUTES;
/** A PDF the e-service prepared for a PAdES signature (its byte ranges' digest goes into the attributes). */
let PDF: PreparedPdf;
let PDF_ATTRIBUTES: Buffer;

function eserviceRequest(change: Partial<EServiceRequest> = {}): EServiceRequest {
  return {
    requestId: randomUUID().replace(/-/g, ''),
    returnUrl: 'https://eservice.example/response',
    signer: [{ name: PNR, value: PERSON.pnr }],
    identityProvider: IDP,
    signRequester: REGISTRATION.entityId,
    signService: SERVICE.signServiceEntityId,
    signatureAlgorithm: 'http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256',
    loa: ['http://id.elegnamnden.se/loa/1.0/loa3'],
    requestedCertAttributes: [
      { ref: '2.5.4.5', samlNames: [PNR] },
      { ref: '2.5.4.42', samlNames: ['urn:oid:2.5.4.42'] },
      { ref: '2.5.4.4', samlNames: ['urn:oid:2.5.4.4'] },
    ],
    signMessage: { text: MESSAGE, mustShow: true },
    tasks: [
      {
        id: 'xml',
        sigType: 'XML',
        adesType: 'BES',
        toBeSignedBytes: SIGNED_INFO,
        adesObject: { signatureId: 'sig-1' },
      },
      { id: 'cms', sigType: 'CMS', adesType: 'BES', toBeSignedBytes: SIGNED_ATTRIBUTES },
      { id: 'pdf', sigType: 'PDF', adesType: 'BES', toBeSignedBytes: PDF_ATTRIBUTES },
    ],
    ...change,
  };
}

interface Flow {
  readonly encoded: string;
  readonly octets: Buffer;
  readonly record: SignRequestRecord;
  readonly inResponseTo: string;
}

/** What the door does with a posted SignRequest: the pipeline request it makes and the AuthnRequest ID. */
function arrive(request: EServiceRequest, key = eservice): Flow {
  const encoded = signRequest(signRequestTemplate(request), key);
  const octets = Buffer.from(encoded, 'base64');
  // Read with the e-service's registered key even for a stranger's request: the CA must refuse it itself.
  const read = readSignRequest(encoded, {
    ...SERVICE,
    registrations: [{ ...REGISTRATION, certificates: [eservice.certificate, stranger.certificate] }],
    now: new Date(),
  });
  if (read.kind !== 'accepted') throw new Error(`refused: ${read.refusal.message}`);
  const pipeline = pipelineRequestOf(read.request);
  const documents = taskDocuments(pipeline).map((d, i) => ({ ...d, task: pipeline.tasks[i]! }));
  const nonce = assertionNonce({
    requestId: pipeline.requestId,
    keyType: pipeline.keyType,
    signatureAlgorithm: pipeline.signatureAlgorithm,
    documents,
  });
  const record = sampleSignRequestRecord({
    id: pipeline.requestId,
    keyType: pipeline.keyType,
    signatureAlgorithm: pipeline.signatureAlgorithm,
    documents,
    signer: {
      commonName: `${PERSON.given} ${PERSON.sn}`,
      givenName: PERSON.given,
      surname: PERSON.sn,
      serialNumber: PERSON.pnr,
      country: 'SE',
    },
    identityAssertion: 'replaced below',
  });
  return { encoded, octets, record, inResponseTo: authnRequestId(nonce, octets) };
}

function assertion(
  flow: Flow,
  change: { attributes?: Record<string, string>; inResponseTo?: string; id?: string } = {},
): Buffer {
  const digest = createHash('sha256').update(MESSAGE, 'utf8').digest('base64');
  const xml = samlAssertionXml({
    id: change.id ?? `_${randomUUID()}`,
    issuer: IDP,
    inResponseTo: change.inResponseTo ?? flow.inResponseTo,
    recipient: SP.acsUrl,
    audience: SP.entityId,
    now: Date.now(),
    attributes: change.attributes ?? {
      [PNR]: PERSON.pnr,
      'urn:oid:2.5.4.42': PERSON.given,
      'urn:oid:2.5.4.4': PERSON.sn,
      'urn:oid:2.16.840.1.113730.3.1.241': `${PERSON.given} ${PERSON.sn}`,
      [SIGN_MESSAGE_DIGEST_ATTRIBUTE]: `http://www.w3.org/2001/04/xmlenc#sha256;${digest}`,
    },
  });
  const id = /ID="([^"]+)"/.exec(xml)![1]!;
  return Buffer.from(xmlsec1SignById(keys.dir, xml, id, 'Assertion', idpKey));
}

/** xmlsec1's verdict on an assembled XAdES, with the leaf certificate (PEM). */
function xadesVerifies(xml: string, certificatePem: string): boolean {
  writeFileSync(join(keys.dir, 'leaf.pem'), certificatePem);
  return xmlsec1Verifies(
    keys.dir,
    xml,
    join(keys.dir, 'leaf.pem'),
    'Id:http://uri.etsi.org/01903/v1.3.2#:SignedProperties',
  );
}

async function signedWith(
  flow: Flow,
  assertionOctets: Buffer,
  record = flow.record,
): Promise<SignRequestRecord> {
  const withEvidence = {
    ...record,
    identityAssertion: encodeDssEvidence({ signRequest: flow.octets, assertion: assertionOctets }),
  };
  await stack.requests.create(withEvidence);
  return (await processSignRequest(signing, withEvidence.id)).record;
}

test('the tasks are signed under a certificate for the person the assertion names, with the SAML AuthContext', async () => {
  const flow = arrive(eserviceRequest());
  const assertionOctets = assertion(flow);
  // The API's check at intake: the same verifier, with the login still valid.
  const verified = await dssVerifier.verify(
    encodeDssEvidence({ signRequest: flow.octets, assertion: assertionOctets }),
    assertionNonce({
      requestId: flow.record.id,
      keyType: flow.record.keyType,
      signatureAlgorithm: flow.record.signatureAlgorithm,
      documents: flow.record.documents!,
    }),
  );
  expect(verified.signer).toEqual(flow.record.signer);

  const done = await signedWith(flow, assertionOctets);
  expect(done.error).toBeUndefined();
  expect(done.status).toBe('signed');
  const certificate = new X509Certificate(done.certificate!);
  expect(certificate.subject).toContain(`serialNumber=${PERSON.pnr}`);
  const saci = readAuthContextExtension(done.certificate!)!.contexts[0]!.contextInfo!;
  const context = parseSamlAuthContext(saci);
  expect(context.authContextInfo).toMatchObject({
    IdentityProvider: IDP,
    AssertionRef: expect.stringMatching(/^_/),
  });
  const [xml, cms, pdf] = (await stack.requests.get(done.id))!.documentResults!;
  const root = done.chain!.at(-1)!;
  // CMS: the e-service assembles its CAdES around the updated attributes; openssl verifies it.
  const attributes = Buffer.from(cms!.toBeSignedBytes!, 'base64');
  expect(attributes.equals(SIGNED_ATTRIBUTES)).toBe(false);
  const certificatesDer = [pemToDer(done.certificate!), ...done.chain!.slice(0, -1).map((p) => pemToDer(p))];
  const signedData = (result: typeof cms): Buffer =>
    assembleCms(
      {
        toBeSignedBytes: Buffer.from(result!.toBeSignedBytes!, 'base64'),
        signature: Buffer.from(result!.signature!, 'base64'),
      },
      certificatesDer,
    );
  const cades = signedData(cms);
  expect(opensslCmsVerify({ cms: cades, content: CONTENT, rootPem: root }).ok).toBe(true);
  // XML: the e-service assembles its XAdES with the updated SignedInfo and object; xmlsec1 verifies it.
  const xmlSignature = Buffer.from(xml!.signature!, 'base64');
  expect(xmlSignature).toHaveLength(64);
  const signed = assembleXades(
    {
      toBeSignedBytes: Buffer.from(xml!.toBeSignedBytes!, 'base64'),
      adesObject: Buffer.from(xml!.adesObject!, 'base64'),
      signature: xmlSignature,
    },
    'sig-1',
    pemToDer(done.certificate!),
  ).toString('utf8');
  expect(xadesVerifies(signed, done.certificate!)).toBe(true);
  expect(xadesVerifies(signed.replace('<flat>12</flat>', '<flat>13</flat>'), done.certificate!)).toBe(false);
  // EU DSS (offline, B-B policy: no revocation data at B-B) validates both as their baselines.
  const verdict = (report: PdfValidationReport): unknown =>
    report.signatures.map((x) => ({
      format: x.signatureFormat,
      indication: x.indication,
    }));
  const chain = { trustedRootsPem: [root], intermediatesPem: done.chain!.slice(0, -1) };
  expect(verdict(validatePdfSignatures({ pdf: Buffer.from(signed), ...chain }))).toEqual([
    { format: 'XAdES-BASELINE-B', indication: 'TOTAL_PASSED' },
  ]);
  expect(verdict(validatePdfSignatures({ pdf: cades, detachedContent: CONTENT, ...chain }))).toEqual([
    { format: 'CAdES-BASELINE-B', indication: 'TOTAL_PASSED' },
  ]);
  // PDF: the e-service writes its CMS around the updated attributes into the PDF's /Contents.
  expect(verdict(validatePdfSignatures({ pdf: PDF.embed(signedData(pdf)), ...chain }))).toEqual([
    { format: 'PAdES-BASELINE-B', indication: 'TOTAL_PASSED' },
  ]);
});

describe('refused by the CA', () => {
  async function refusal(
    flow: Flow,
    assertionOctets: Buffer,
    record = flow.record,
  ): Promise<string | undefined> {
    const done = await signedWith(flow, assertionOctets, record);
    expect(done.status).toBe('failed');
    return done.error?.code;
  }

  test("a table write of a task's bytes after the login, with or without its digest", async () => {
    const flow = arrive(eserviceRequest());
    const forged = {
      ...flow.record.documents![1]!.task!,
      toBeSigned: Buffer.from('forged').toString('base64'),
    };
    const bytesOnly = flow.record.documents!.map((d, i) => (i === 1 ? { ...d, task: forged } : d));
    expect(await refusal(flow, assertion(flow), { ...flow.record, documents: bytesOnly })).toBe(
      'SIGN_TASK_MISMATCH',
    );
    const again = arrive(eserviceRequest());
    const withDigest = again.record.documents!.map((d, i) =>
      i === 1 ? { ...d, task: forged, digest: signTaskDigest(forged, d.digestAlgorithm) } : d,
    );
    expect(await refusal(again, assertion(again), { ...again.record, documents: withDigest })).toBe(
      'ASSERTION_BINDING_MISMATCH',
    );
  });

  test('an assertion answering another AuthnRequest', async () => {
    const flow = arrive(eserviceRequest());
    expect(
      await refusal(flow, assertion(flow, { inResponseTo: arrive(eserviceRequest()).inResponseTo })),
    ).toBe('ASSERTION_BINDING_MISMATCH');
  });

  test('an assertion for another person than the Signer', async () => {
    const flow = arrive(eserviceRequest());
    const other = { [PNR]: '194911172296', 'urn:oid:2.5.4.42': 'Ove', 'urn:oid:2.5.4.4': 'Other' };
    expect(await refusal(flow, assertion(flow, { attributes: other }))).toBe('SIGNER_MISMATCH');
  });

  test('no signMessageDigest though the message must be shown', async () => {
    const flow = arrive(eserviceRequest());
    const attributes = { [PNR]: PERSON.pnr, 'urn:oid:2.5.4.42': PERSON.given, 'urn:oid:2.5.4.4': PERSON.sn };
    expect(await refusal(flow, assertion(flow, { attributes }))).toBe('ASSERTION_APPROVAL_MISSING');
  });

  test('an assertion altered after the identity provider signed it', async () => {
    const flow = arrive(eserviceRequest());
    const forged = Buffer.from(assertion(flow).toString('utf8').replace(`>${PERSON.given}<`, '>Eve<'));
    expect(await refusal(flow, forged)).toBe('ASSERTION_SIGNATURE_INVALID');
  });

  test('a SignRequest signed by a key the e-service did not register', async () => {
    const flow = arrive(eserviceRequest(), stranger);
    expect(await refusal(flow, assertion(flow))).toBe('CLIENT_NOT_TRUSTED');
  });

  test('the same assertion for a second request', async () => {
    const flow = arrive(eserviceRequest());
    const assertionOctets = assertion(flow, { id: `_${randomUUID()}` });
    expect((await signedWith(flow, assertionOctets)).status).toBe('signed');
    const again = { ...flow.record, id: randomUUID() };
    expect(await refusal(flow, assertionOctets, again)).toMatch(/ASSERTION_(ALREADY_USED|BINDING_MISMATCH)/);
  });
});
