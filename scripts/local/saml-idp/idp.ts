/**
 * A local SAML 2.0 identity provider for the test citizens (scripts/local/idp/citizens.ts), behaving as the
 * Swedish eID framework's IdPs do for a signature service (02 §5–§7, 04 §3.2.4, 13, 14). Loopback only.
 *
 * HTTP surface (under http://127.0.0.1:<port>):
 *   GET  /saml/idp/metadata     the IdP's md:EntityDescriptor
 *   POST /saml/idp/sso          HTTP-POST binding (SAMLRequest, RelayState): a signed AuthnRequest of a
 *                               trusted SP with ForceAuthn="true" → the login page (citizen, SignMessage)
 *   POST /saml/idp/sso/decide   the login page's form (pending, citizen, action=approve|cancel) → an
 *                               auto-posting form to the SP's ACS with SAMLResponse and RelayState
 *   POST /saml/idp/test/next    only with `testKnobs`: JSON {"misbehave": "<knob>"} for the next response
 * Refusals of a request (unsigned, unknown SP, no ForceAuthn, unlisted ACS, encrypted SignMessage) are
 * HTML error pages with status 400 or 403; no Response goes to an SP the IdP cannot trust.
 *
 * Test knobs (attack tests only; never set by `npm start`): the next approved response misbehaves once:
 *   omit-sign-message-digest   no signMessageDigest attribute although a SignMessage was shown
 *   wrong-sign-message-digest  the digest of another message
 *   assertion-unknown-key      the assertion signed by a key no metadata names (Response still by the IdP)
 *   assertion-unsigned         only the Response signed
 *   wrong-in-response-to       Response and SubjectConfirmationData InResponseTo another ID
 *   other-citizen              the assertion names another citizen than the one chosen (PrincipalSelection)
 *   loa-not-requested          AuthnContextClassRef a level the request did not ask for
 *   sad-bad-irt, sad-bad-docs, sad-bad-reqid, sad-bad-aud, sad-expired   one wrong claim of the SAD
 * Set with `startSamlIdp({ misbehave })` (the first response), `handle.misbehaveNext(knob)`, or the
 * endpoint above.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NS, XmlMalformedError, childrenNS, parseXml, verifyXml } from '@pipeline/xml';
import { escapeHtml } from '../../shared/html';
import { TEST_CITIZENS, findCitizenByPersonalNumber, type TestCitizen } from '../idp/citizens';
import { page, renderSignMessage } from '../idp/html';
import { LOA, LOA_VALUES, type Loa } from '../idp/profile';
import { throwawayKeyPair, type KeyPair } from './keys';
import { idpMetadata, readSpMetadata, type TrustedSp } from './metadata';
import {
  errorResponse,
  sadClaims,
  sadJwt,
  successResponse,
  xmlSigner,
  type ResponseContext,
  type SadClaims,
} from './response';
import {
  AuthnRequestRefusedError,
  STATUS,
  chooseLoa,
  readAuthnRequest,
  requestOrigin,
  signMessageDigest,
  type AuthnRequestParts,
} from './saml';

export const MISBEHAVIOURS = [
  'omit-sign-message-digest',
  'wrong-sign-message-digest',
  'assertion-unknown-key',
  'assertion-unsigned',
  'wrong-in-response-to',
  'other-citizen',
  'loa-not-requested',
  'sad-bad-irt',
  'sad-bad-docs',
  'sad-bad-reqid',
  'sad-bad-aud',
  'sad-expired',
] as const;
export type Misbehaviour = (typeof MISBEHAVIOURS)[number];

export interface SamlIdpOptions {
  /** 0 (default): a free port on 127.0.0.1. */
  readonly port?: number;
  /** The IdP's signing key and certificate. */
  readonly keys: KeyPair;
  /** The metadata (XML text) of each SP it trusts. */
  readonly spMetadata: readonly string[];
  /** The first approved response misbehaves so (tests only). */
  readonly misbehave?: Misbehaviour;
  /** Serve POST /saml/idp/test/next (tests only). */
  readonly testKnobs?: boolean;
  readonly log?: (line: string) => void;
}

export interface SamlIdp {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  readonly port: number;
  readonly entityId: string;
  readonly ssoUrl: string;
  readonly metadataXml: string;
  misbehaveNext(knob: Misbehaviour | undefined): void;
  close(): Promise<void>;
}

interface PendingLogin {
  readonly request: AuthnRequestParts;
  readonly sp: TrustedSp;
  readonly acsUrl: string;
  readonly relayState: string | undefined;
  readonly loa: string;
  readonly expires: number;
}

const PENDING_TTL_MS = 10 * 60_000;
const MAX_BODY = 512 * 1024;

class HttpRefusal extends Error {
  public override readonly name = 'HttpRefusal';
  public constructor(
    public readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function readBody(req: IncomingMessage): Promise<string> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) throw new HttpRefusal(413, 'The request is too large.');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

const form = async (req: IncomingMessage): Promise<URLSearchParams> =>
  new URLSearchParams(await readBody(req));

function sendHtml(res: ServerResponse, status: number, html: string): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(html);
}

/** The HTTP-POST binding's auto-submitting form (SAML bindings §3.5.4), with a button without scripts. */
function postForm(acsUrl: string, samlResponse: string, relayState: string | undefined): string {
  const relay =
    relayState === undefined
      ? ''
      : `<input type="hidden" name="RelayState" value="${escapeHtml(relayState)}">`;
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Returning to the service</title></head>
<body onload="document.forms[0].submit()">
<form method="post" action="${escapeHtml(acsUrl)}">
<input type="hidden" name="SAMLResponse" value="${Buffer.from(samlResponse, 'utf8').toString('base64')}">${relay}
<noscript><button type="submit" id="continue">Continue</button></noscript>
</form>
</body></html>
`;
}

function loginPage(id: string, pending: PendingLogin, citizens: readonly TestCitizen[]): string {
  const { request } = pending;
  const options = citizens
    .map(
      (c) =>
        `<option value="${c.personalIdentityNumber}">${escapeHtml(c.name)} (${c.personalIdentityNumber})</option>`,
    )
    .join('');
  const message = request.signMessage
    ? `<p>The service asks you to sign:</p><div class="message" id="sign-message">${renderSignMessage(
        request.signMessage.text,
        request.signMessage.mimeType === 'text' ? 'text/plain' : request.signMessage.mimeType,
      )}</div>`
    : '';
  return page(
    'Log in and sign',
    `<p>${escapeHtml(request.issuer)} asks who you are${request.signMessage ? ' and for your signature' : ''}.</p>
${message}
<form method="post" action="/saml/idp/sso/decide">
<input type="hidden" name="pending" value="${id}">
<label for="citizen">Test citizen</label>
<select id="citizen" name="citizen">${options}</select>
<div class="actions">
<button type="submit" id="approve" name="action" value="approve">Approve and sign</button>
<button type="submit" id="cancel" name="action" value="cancel" class="secondary">Cancel</button>
</div>
</form>`,
  );
}

/** Starts the IdP on 127.0.0.1 and resolves once it listens. */
export async function startSamlIdp(options: SamlIdpOptions): Promise<SamlIdp> {
  const log = options.log ?? ((): void => undefined);
  const sps = new Map(options.spMetadata.map(readSpMetadata).map((sp) => [sp.entityId, sp]));
  const pending = new Map<string, PendingLogin>();
  let next: Misbehaviour | undefined = options.misbehave;
  const signer = xmlSigner(options.keys);
  let entityId = '';
  let metadataXml = '';

  const server = createServer((req, res) => {
    void route(req, res).catch((err: unknown) => {
      const status =
        err instanceof HttpRefusal
          ? err.status
          : err instanceof AuthnRequestRefusedError || err instanceof XmlMalformedError
            ? 400
            : 500;
      const message = status === 500 ? 'The local SAML IdP failed.' : (err as Error).message;
      if (status === 500) log(`saml-idp error: ${(err as Error).name}: ${(err as Error).message}`);
      if (!res.headersSent)
        sendHtml(res, status, page('The request was refused', `<p class="error">${escapeHtml(message)}</p>`));
    });
  });

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && path === '/saml/idp/metadata') {
      res.writeHead(200, { 'content-type': 'application/samlmetadata+xml' }).end(metadataXml);
    } else if (req.method === 'POST' && path === '/saml/idp/sso') {
      await sso(req, res);
    } else if (req.method === 'POST' && path === '/saml/idp/sso/decide') {
      await decide(req, res);
    } else if (req.method === 'POST' && path === '/saml/idp/test/next' && options.testKnobs === true) {
      const knob = (JSON.parse(await readBody(req)) as { misbehave?: string }).misbehave;
      if (knob !== undefined && !(MISBEHAVIOURS as readonly string[]).includes(knob)) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({ error: 'unknown_misbehaviour', message: `knobs: ${MISBEHAVIOURS.join(', ')}` }),
        );
        return;
      }
      next = knob as Misbehaviour | undefined;
      res.writeHead(204).end();
    } else {
      sendHtml(res, 404, page('Not found', '<p class="error">No such page.</p>'));
    }
  }

  async function sso(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await form(req);
    const samlRequest = body.get('SAMLRequest');
    if (!samlRequest) throw new HttpRefusal(400, 'SAMLRequest is missing.');
    const xml = Buffer.from(samlRequest, 'base64').toString('utf8');
    if (!xml.trimStart().startsWith('<')) {
      // node-saml deflates unless skipRequestCompression is set; the HTTP-POST binding (§3.5.4) never does.
      throw new HttpRefusal(400, 'SAMLRequest is not base64 XML (the HTTP-POST binding does not deflate).');
    }
    const unverified = requestOrigin(parseXml(xml).documentElement!);
    const sp = sps.get(unverified.issuer);
    if (sp === undefined)
      throw new HttpRefusal(403, 'The AuthnRequest comes from an SP this IdP does not trust.');
    let signed: string;
    try {
      signed = verifyXml(xml, {
        trusted: sp.signingCerts,
        signature: (doc) => childrenNS(doc.documentElement!, NS.ds, 'Signature')[0],
        referenceId: unverified.id,
      }).signedXml;
    } catch {
      throw new HttpRefusal(403, 'The AuthnRequest is not signed by the SP its metadata names.');
    }
    // Read again from the octets the signature covers (no wrapped element is read as signed).
    const request = readAuthnRequest(parseXml(signed).documentElement!);
    if (!request.forceAuthn) throw new HttpRefusal(400, 'A signature service must send ForceAuthn="true".');
    const acsUrl = request.acsUrl ?? sp.acsUrls[0];
    if (!sp.acsUrls.includes(acsUrl)) {
      throw new HttpRefusal(400, 'The AssertionConsumerServiceURL is not in the SP metadata.');
    }
    const relayState = body.get('RelayState') ?? undefined;
    const ctx: ResponseContext = {
      idpEntityId: entityId,
      spEntityId: sp.entityId,
      acsUrl,
      inResponseTo: request.id,
    };
    const loa = chooseLoa(request.requestedLoas);
    if (loa === undefined) {
      const xmlResponse = await errorResponse(ctx, signer, {
        top: STATUS.requester,
        second: STATUS.noAuthnContext,
        message: 'None of the requested levels of assurance is supported.',
      });
      sendHtml(res, 200, postForm(acsUrl, xmlResponse, relayState));
      return;
    }
    const id = randomBytes(24).toString('base64url');
    const login: PendingLogin = {
      request,
      sp,
      acsUrl,
      relayState,
      loa,
      expires: Date.now() + PENDING_TTL_MS,
    };
    pending.set(id, login);
    const chosen =
      request.principal === undefined ? undefined : findCitizenByPersonalNumber(request.principal);
    sendHtml(res, 200, loginPage(id, login, chosen ? [chosen] : TEST_CITIZENS));
  }

  async function decide(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await form(req);
    const id = body.get('pending') ?? '';
    const login = pending.get(id);
    pending.delete(id);
    if (login === undefined || login.expires < Date.now()) {
      throw new HttpRefusal(400, 'This login is unknown or has expired; start again at the service.');
    }
    const { request, sp, acsUrl, relayState } = login;
    const ctx: ResponseContext = {
      idpEntityId: entityId,
      spEntityId: sp.entityId,
      acsUrl,
      inResponseTo: request.id,
    };
    if (body.get('action') !== 'approve') {
      const xml = await errorResponse(ctx, signer, {
        top: STATUS.responder,
        second: STATUS.cancel,
        message: 'The user cancelled.',
      });
      sendHtml(res, 200, postForm(acsUrl, xml, relayState));
      return;
    }
    const citizen = findCitizenByPersonalNumber(body.get('citizen') ?? '');
    if (citizen === undefined) throw new HttpRefusal(400, 'Choose one of the test citizens.');
    if (request.principal !== undefined && citizen.personalIdentityNumber !== request.principal) {
      const xml = await errorResponse(ctx, signer, {
        top: STATUS.responder,
        second: STATUS.unknownPrincipal,
        message: 'The user is not the one the service named.',
      });
      sendHtml(res, 200, postForm(acsUrl, xml, relayState));
      return;
    }
    if (LOA_VALUES.indexOf(citizen.loa) < LOA_VALUES.indexOf(login.loa as Loa)) {
      const xml = await errorResponse(ctx, signer, {
        top: STATUS.responder,
        second: STATUS.noAuthnContext,
        message: "The user's eID does not reach the requested level of assurance.",
      });
      sendHtml(res, 200, postForm(acsUrl, xml, relayState));
      return;
    }
    const knob = next;
    next = undefined;
    sendHtml(res, 200, postForm(acsUrl, await approvedResponse(ctx, login, citizen, knob), relayState));
  }

  async function approvedResponse(
    ctx: ResponseContext,
    login: PendingLogin,
    chosen: TestCitizen,
    knob: Misbehaviour | undefined,
  ): Promise<string> {
    const { request } = login;
    const citizen = knob === 'other-citizen' ? TEST_CITIZENS.find((c) => c !== chosen)! : chosen;
    const loa =
      knob === 'loa-not-requested'
        ? [LOA.loa2, LOA.loa3, LOA.loa4].find((l) => !request.requestedLoas.includes(l))!
        : login.loa;
    let digest = request.signMessage ? signMessageDigest(request.signMessage.messageBase64) : undefined;
    if (knob === 'omit-sign-message-digest') digest = undefined;
    if (knob === 'wrong-sign-message-digest') {
      digest = signMessageDigest(Buffer.from('a message the citizen never saw').toString('base64'));
    }
    let sad: string | undefined;
    if (request.sadRequest) {
      const claims: SadClaims = sadClaims(entityId, request.sadRequest, citizen, loa);
      const bad: Partial<SadClaims> =
        knob === 'sad-bad-irt'
          ? { irt: '_another-sad-request' }
          : knob === 'sad-bad-docs'
            ? { docs: claims.docs + 1 }
            : knob === 'sad-bad-reqid'
              ? { reqid: 'another-sign-request' }
              : knob === 'sad-bad-aud'
                ? { aud: 'https://another-signing-service.example' }
                : knob === 'sad-expired'
                  ? { exp: Math.floor(Date.now() / 1000) - 60 }
                  : {};
      sad = await sadJwt({ ...claims, ...bad }, options.keys.keyPem);
    }
    const wrongId = knob === 'wrong-in-response-to' ? `_${randomBytes(16).toString('hex')}` : undefined;
    const responseCtx = wrongId ? { ...ctx, inResponseTo: wrongId } : ctx;
    return successResponse(
      responseCtx,
      { citizen, loa, subjectInResponseTo: wrongId ?? request.id, signMessageDigest: digest, sad },
      {
        response: signer,
        assertion:
          knob === 'assertion-unsigned'
            ? undefined
            : knob === 'assertion-unknown-key'
              ? xmlSigner(throwawayKeyPair('Unknown signer'))
              : signer,
      },
    );
  }

  const port = await new Promise<number>((done, fail) => {
    server.once('error', fail);
    server.listen(options.port ?? 0, '127.0.0.1', () => done((server.address() as AddressInfo).port));
  });
  const url = `http://127.0.0.1:${port}`;
  entityId = `${url}/saml/idp`;
  const ssoUrl = `${url}/saml/idp/sso`;
  metadataXml = idpMetadata(entityId, ssoUrl, options.keys.certPem);
  const sweep = setInterval(() => {
    for (const [id, login] of pending) if (login.expires < Date.now()) pending.delete(id);
  }, 60_000).unref();
  return {
    url,
    port,
    entityId,
    ssoUrl,
    metadataXml,
    misbehaveNext: (knob) => {
      next = knob;
    },
    close: () =>
      new Promise((done) => {
        clearInterval(sweep);
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}
