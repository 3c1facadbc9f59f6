/**
 * The demo page's "sign with the Swedish protocol" path (scripts/client/demo, DemoDss): the registered
 * local e-service prepares the PDF, writes and signs its SignRequest (one PAdES task, the text as the
 * SignMessage the citizen must be shown), and reads the door's SignResponse: verified with the service's
 * certificate (xmlsec1), the CMS assembled around the returned attributes and embedded in the PDF.
 */
import { X509Certificate } from 'node:crypto';
import { DOMParser } from '@xmldom/xmldom';
import type { DemoDss, DemoDssOutcome } from '../../client/demo/server';
import { preparePdfSignature, type PreparedPdf } from '../../client/src/pdf-signature';
import type { LocalDssExt } from '../runner/dss-ext';
import { newRequestId, responseSignatureVerifies, signRequest, signRequestTemplate } from './sign-request';
import { assembleCms, signedAttributesOf } from './tasks';

const CSIG = 'http://id.elegnamnden.se/csig/1.1/dss-ext/ns';
const DSS = 'urn:oasis:names:tc:dss:1.0:core:schema';
/** Requests waiting for their SignResponse at most this long (the door's login lasts 15 minutes). */
const PENDING_MS = 20 * 60_000;

export function demoDss(door: LocalDssExt): DemoDss {
  const pending = new Map<string, { name: string; pdf: PreparedPdf; at: number }>();
  return {
    doorUrl: door.url,
    async start(upload, text) {
      const pdf = await preparePdfSignature(upload.data, { signingTime: new Date() });
      const requestId = newRequestId();
      const now = Date.now();
      for (const [id, p] of pending) if (now - p.at > PENDING_MS) pending.delete(id);
      pending.set(requestId, { name: upload.name, pdf, at: now });
      const xml = signRequestTemplate({
        requestId,
        returnUrl: door.eservice.returnUrls[0]!,
        identityProvider: door.idp.entityId,
        signRequester: door.eservice.entityId,
        signService: door.signServiceEntityId,
        signatureAlgorithm: 'http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256',
        loa: ['http://id.elegnamnden.se/loa/1.0/loa3'],
        signMessage: { text, mustShow: true },
        tasks: [
          {
            id: 'pdf',
            sigType: 'PDF',
            adesType: 'BES',
            toBeSignedBytes: signedAttributesOf(pdf.digest('sha256')),
          },
        ],
      });
      return {
        Binding: 'POST/XML/1.0',
        RelayState: requestId,
        EidSignRequest: signRequest(xml, door.eservice.key),
      };
    },
    async finish(form): Promise<DemoDssOutcome> {
      const requestId = form.get('RelayState') ?? '';
      const waiting = pending.get(requestId);
      const xml = Buffer.from(form.get('EidSignResponse') ?? '', 'base64').toString('utf8');
      if (!waiting || !responseSignatureVerifies(xml, door.serviceCertPem)) {
        return {
          kind: 'refused',
          status: 'not a SignResponse of the signing service for a request of this page',
        };
      }
      pending.delete(requestId);
      const doc = new DOMParser().parseFromString(xml, 'text/xml');
      const text = (ns: string, name: string) =>
        Array.from(doc.getElementsByTagNameNS(ns, name)).map((e) => (e.textContent ?? '').trim());
      const [major] = text(DSS, 'ResultMajor');
      if (!major?.endsWith(':Success')) {
        const [minor] = text(DSS, 'ResultMinor');
        const [message] = text(DSS, 'ResultMessage');
        return {
          kind: 'refused',
          status: (minor ?? major ?? 'no result').replace(/^.*[/:]/, ''),
          ...(message ? { message } : {}),
        };
      }
      const chain = text(CSIG, 'X509Certificate').map(
        (b64) => new X509Certificate(Buffer.from(b64, 'base64')),
      );
      const cms = assembleCms(
        {
          toBeSignedBytes: Buffer.from(text(CSIG, 'ToBeSignedBytes')[0] ?? '', 'base64'),
          signature: Buffer.from(text(CSIG, 'Base64Signature')[0] ?? '', 'base64'),
        },
        chain.slice(0, -1).map((c) => c.raw),
      );
      return {
        kind: 'signed',
        name: waiting.name,
        pdf: waiting.pdf.embed(cms),
        signer: chain[0]!.subject.replace(/\n/g, ', '),
      };
    },
  };
}
