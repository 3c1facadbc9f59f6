/**
 * A demo e-service web page, built on the client modules (../src) as an e-service would build its own:
 *
 *   GET  /           choose one PDF or several and write the text to approve
 *   POST /documents  the upload: each PDF is checked and prepared (signing.ts: digest of the byte
 *                    ranges, a fresh request id, the nonce binding them and the sign message; several
 *                    PDFs go in one `documents` request under one login)
 *   GET  /review     the documents' names, the fingerprint and the text, before anyone logs in
 *   POST /login      redirects the browser to the identity provider (beginLogin: the authorization
 *                    request with PKCE, the nonce, the sign scope and the signed signRequest)
 *   GET  /callback   back from the identity provider: the code grant (completeLogin), the sign request
 *                    with the ID token, each signed PDF, and its validation
 *   GET  /result     what happened: signed (with the validations), cancelled, or refused
 *   GET  /download   the signed PDF (?n=<index> for one of several)
 *   POST /reset      start over
 *   POST /dss/documents  the "sign with the Swedish protocol" path (where the runner offers DemoDss): one
 *                    PDF and the text, as the registered e-service's signed DSS-Ext SignRequest, in a form
 *                    the browser posts to the signing service's DSS-Ext door
 *   POST /dss/response   the door's SignResponse (the e-service's registered return URL): the signed PDF
 *   GET  /dss/download   it (?id=<RequestID>)
 *
 * State lives server-side per browser session (sessions.ts); the browser only ever
 * carries the session id and, through the identity provider, the OAuth state. The login binds the
 * callback to the browser that started it: POST /login also sets the OAuth state in a cookie of its own
 * (demo_login, path /callback), and a callback is taken only when its `state` is that cookie's and the
 * pending login's; any other (a link someone else made, carrying the victim's cookies but not knowing
 * the state) is refused and leaves the pending login as it was. Loopback only. The sign message and the
 * document are never logged.
 */
import { X509Certificate, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AuthorizationError, beginLogin, completeLogin, type PendingLogin } from '../src/oidc-login';
import { PdfSignatureError } from '../src/pdf-signature';
import { SigningFailedError } from '../src/sign-document';
import {
  DocumentsRequestError,
  MAX_DOCUMENTS,
  SigningApiError,
  type ClientSigningKey,
  type SigningClient,
  type SignMessage,
} from '../src/signing-client';
import { fingerprint } from '../../shared/html';
import { FormError, parseMultipart, readBody } from './multipart';
import {
  cancelledPage,
  dssContinuePage,
  dssRefusedPage,
  dssSignedPage,
  errorPage,
  failedPage,
  reviewPage,
  signedPage,
  startPage,
  type ValidationSummary,
} from './pages';
import { SESSION_COOKIE, Sessions, type Outcome, type Session } from './sessions';
import { prepareDemoSigning, type DemoSigning, type UploadedPdf } from './signing';

export type { ValidationSummary } from './pages';

/** The "sign with the Swedish protocol" path: the registered e-service's side of DSS-Ext. */
export interface DemoDss {
  /** The door's base URL (`.../dss/v1`). */
  readonly doorUrl: string;
  /** The fields of the form the browser posts to the door's `/sign`: this PDF, this text to approve. */
  start(pdf: UploadedPdf, text: string): Promise<Record<string, string>>;
  /** The door's SignResponse form: the signed PDF, or why there is none. */
  finish(form: URLSearchParams): Promise<DemoDssOutcome>;
}

export type DemoDssOutcome =
  | { readonly kind: 'signed'; readonly name: string; readonly pdf: Buffer; readonly signer: string }
  | { readonly kind: 'refused'; readonly status: string; readonly message?: string };

export interface DemoServiceOptions {
  /** The DSS-Ext path, where the signing service has the door. */
  readonly dss?: DemoDss;
  /** The signing API as this e-service's client. */
  readonly signing: SigningClient;
  /** The identity provider (issuer) and this service's client there. */
  readonly issuer: string;
  readonly clientId: string;
  /** The client's key registered with the identity provider, which signs the signRequest. */
  readonly signRequestKey: ClientSigningKey;
  readonly idTokenSignedResponseAlg?: string;
  /** TCP port on 127.0.0.1; 0 (default) picks a free one. */
  readonly port?: number;
  /** Validates a signed PDF for the result page (the local wiring runs `npm run verify-pdf`). */
  readonly validate?: (pdf: Buffer) => Promise<ValidationSummary>;
  readonly log?: (line: string) => void;
  readonly maxUploadBytes?: number;
}

export interface DemoService {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  readonly server: Server;
  stop(): Promise<void>;
}

/** The OAuth state of the login this browser started, sent back only to the callback. */
const LOGIN_COOKIE = 'demo_login';
const MAX_MESSAGE_CHARACTERS = 1000;

class HttpError extends Error {
  public constructor(
    public readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Every page's headers: no caching, no framing, no scripts, forms only to here and the provider. */
function headers(issuer: string, type: string, door = ''): Record<string, string> {
  return {
    'content-type': type,
    'cache-control': 'no-store',
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    // form-action covers the redirect to the identity provider after POST /login.
    'content-security-policy': `default-src 'none'; style-src 'unsafe-inline'; form-action 'self' ${new URL(issuer).origin}${door}; frame-ancestors 'none'`,
  };
}

function redirect(res: ServerResponse, location: string, cookie?: string): void {
  res
    .writeHead(303, { location, 'cache-control': 'no-store', ...(cookie ? { 'set-cookie': cookie } : {}) })
    .end();
}

/**
 * What the identity provider shows (and refuses when it holds controls, direction marks or other
 * invisible characters): the file name without them.
 */
function displayName(filename: string | undefined): string {
  return (
    [...(filename ?? '')]
      .filter((c) => !/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u115f\u1160\u3164\uffa0]/u.test(c))
      .slice(-120)
      .join('')
      .trim() || 'document.pdf'
  );
}

/** The upload form: the PDFs (one or more) and the text to approve, or why it cannot be taken. */
async function readUpload(
  req: IncomingMessage,
  maxBytes: number,
): Promise<{ pdfs: UploadedPdf[]; message: SignMessage } | { error: string }> {
  const parts = parseMultipart(req.headers['content-type'], await readBody(req, maxBytes));
  const files = parts.filter((p) => p.name === 'document' && p.filename !== undefined && p.data.length > 0);
  const text =
    parts
      .find((p) => p.name === 'message')
      ?.data.toString('utf8')
      .replace(/\r\n/g, '\n') ?? '';
  const mimeType = parts.find((p) => p.name === 'mimeType')?.data.toString('utf8');
  if (files.length === 0) return { error: 'Choose a PDF document.' };
  if (files.length > MAX_DOCUMENTS) return { error: `Choose at most ${MAX_DOCUMENTS} PDF documents.` };
  if (text.trim() === '' || [...text].length > MAX_MESSAGE_CHARACTERS) {
    return { error: `Write the text to approve: 1 to ${MAX_MESSAGE_CHARACTERS} characters.` };
  }
  return {
    pdfs: files.map((f) => ({ name: displayName(f.filename), data: f.data })),
    message: { text, mimeType: mimeType === 'text/markdown' ? 'text/markdown' : 'text/plain' },
  };
}

/** The callback answers the login this browser started: its state is the cookie's and the pending one's. */
function answersPendingLogin(req: IncomingMessage, pending: PendingLogin): boolean {
  const state = new URL(req.url ?? '/', 'http://127.0.0.1').searchParams.get('state');
  const cookie = new RegExp(`(?:^|;\\s*)${LOGIN_COOKIE}=([A-Za-z0-9_-]{1,128})(?:;|$)`).exec(
    req.headers.cookie ?? '',
  )?.[1];
  const same = (value: string | null | undefined): boolean => {
    const [a, b] = [Buffer.from(value ?? ''), Buffer.from(pending.state)];
    return a.length === b.length && timingSafeEqual(a, b);
  };
  return same(state) && same(cookie);
}

/** The name a signed PDF downloads under: `<name>-signed.pdf`, with an ASCII fallback. */
function contentDisposition(name: string): string {
  const base = name.replace(/\.pdf$/i, '');
  const ascii = `${base.replace(/[^A-Za-z0-9._-]/g, '_')}-signed.pdf`;
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(`${base}-signed.pdf`)}`;
}

/** What the page handlers share: the options, the sessions, and this service's address once it listens. */
interface DemoContext {
  readonly options: DemoServiceOptions;
  readonly log: (line: string) => void;
  readonly maxUpload: number;
  readonly sessions: Sessions;
  /** Signed PDFs of the DSS-Ext path by RequestID (128 random bits), for their download. */
  readonly dssSigned: Map<string, { readonly name: string; readonly pdf: Buffer }>;
  url: string;
}

function html(ctx: DemoContext, res: ServerResponse, status: number, body: string): void {
  const door = ctx.options.dss ? ` ${new URL(ctx.options.dss.doorUrl).origin}` : '';
  res.writeHead(status, headers(ctx.options.issuer, 'text/html; charset=utf-8', door)).end(body);
}

async function upload(ctx: DemoContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const form = await readUpload(req, ctx.maxUpload);
  if ('error' in form) return html(ctx, res, 400, startPage(form.error));
  let signing;
  try {
    signing = await prepareDemoSigning(form.pdfs, form.message);
  } catch (err) {
    if (err instanceof PdfSignatureError || err instanceof DocumentsRequestError) {
      return html(ctx, res, 400, startPage(`These PDFs cannot be signed: ${err.message}`));
    }
    throw err;
  }
  const [session, cookie] = ctx.sessions.of(req, true);
  Object.assign(session!, { signing, pending: undefined, outcome: undefined });
  redirect(res, '/review', cookie);
}

function review(ctx: DemoContext, session: Session, res: ServerResponse): void {
  if (!session.signing) throw new HttpError(400, 'choose a document first');
  const { names, login: shown, message } = session.signing;
  return html(
    ctx,
    res,
    200,
    reviewPage({
      documentNames: names,
      fingerprint: fingerprint(shown.tbsData),
      messageText: message.text,
      mimeType: message.mimeType ?? 'text/plain',
    }),
  );
}

async function login(ctx: DemoContext, session: Session, res: ServerResponse): Promise<void> {
  const { options } = ctx;
  const { signing } = session;
  if (!signing) throw new HttpError(400, 'choose a document first');
  session.pending = await beginLogin({
    issuer: options.issuer,
    clientId: options.clientId,
    redirectUri: `${ctx.url}/callback`,
    nonce: signing.nonce,
    ...(options.idTokenSignedResponseAlg
      ? { idTokenSignedResponseAlg: options.idTokenSignedResponseAlg }
      : {}),
    signature: {
      key: options.signRequestKey,
      tbsData: signing.login.tbsData,
      signMessage: signing.login.signMessage ?? signing.message,
      ...(signing.login.documentName ? { documentName: signing.login.documentName } : {}),
    },
  });
  redirect(
    res,
    session.pending.authorizationUrl.href,
    `${LOGIN_COOKIE}=${session.pending.state}; HttpOnly; SameSite=Lax; Path=/callback`,
  );
}

/** The code grant, the sign request with the ID token, and each signed PDF's validation: the signed outcome. */
async function signAtCallback(
  ctx: DemoContext,
  pending: PendingLogin,
  signing: DemoSigning,
  req: IncomingMessage,
): Promise<Outcome> {
  const { idToken } = await completeLogin(pending, new URL(req.url ?? '/', ctx.url));
  const signed = await signing.complete(ctx.options.signing, idToken);
  const certificate = new X509Certificate(signed.result.certificate!);
  const signer = /(?:^|\n)CN=([^\n]*)/.exec(certificate.subject)?.[1] ?? certificate.subject;
  ctx.log(`demo: request ${signed.requestId} signed (${signed.pdfs.length} documents)`);
  const pdfs = [];
  for (const pdf of signed.pdfs) {
    const validation = await ctx.options
      .validate?.(pdf.pdf)
      .catch((err: Error): ValidationSummary => ({ passed: false, signatures: [], error: err.message }));
    pdfs.push({ ...pdf, ...(validation ? { validation } : {}) });
  }
  return {
    kind: 'signed',
    requestId: signed.requestId,
    certificateSerial: signed.result.certificateSerial ?? '',
    signer,
    ...(signed.result.signMessageHash ? { signMessageHash: signed.result.signMessageHash } : {}),
    pdfs,
  };
}

/** A cancelled login or a refusal the result page explains; anything else is not an outcome (undefined). */
function unsignedOutcome(ctx: DemoContext, err: unknown): Outcome | undefined {
  if (err instanceof AuthorizationError && err.code === 'access_denied') {
    ctx.log('demo: the citizen cancelled at the identity provider; nothing submitted');
    return { kind: 'cancelled' };
  }
  if (
    err instanceof AuthorizationError ||
    err instanceof SigningApiError ||
    err instanceof SigningFailedError
  ) {
    ctx.log(`demo: not signed: ${err.code}`);
    return { kind: 'failed', code: err.code, message: err.message };
  }
  return undefined;
}

async function callback(
  ctx: DemoContext,
  session: Session,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const { pending, signing } = session;
  if (!pending || !signing) throw new HttpError(400, 'no login is under way in this browser');
  // Not the answer to this browser's login: refused, and the login under way stays as it was.
  if (!answersPendingLogin(req, pending)) {
    throw new HttpError(400, 'this callback does not answer the login this browser started');
  }
  // One use: a reloaded or replayed callback finds nothing to complete.
  session.pending = undefined;
  try {
    session.outcome = await signAtCallback(ctx, pending, signing, req);
  } catch (err) {
    const outcome = unsignedOutcome(ctx, err);
    if (!outcome) throw err;
    session.outcome = outcome;
  }
  redirect(res, '/result', `${LOGIN_COOKIE}=; HttpOnly; SameSite=Lax; Path=/callback; Max-Age=0`);
}

function result(ctx: DemoContext, session: Session, res: ServerResponse): void {
  const outcome = session.outcome;
  if (!outcome) throw new HttpError(400, 'nothing has been signed in this browser yet');
  if (outcome.kind === 'cancelled') return html(ctx, res, 200, cancelledPage());
  if (outcome.kind === 'failed') return html(ctx, res, 200, failedPage(outcome.code, outcome.message));
  html(ctx, res, 200, signedPage(outcome));
}

function download(ctx: DemoContext, session: Session, req: IncomingMessage, res: ServerResponse): void {
  const outcome = session.outcome;
  const n = Number(new URL(req.url ?? '/', ctx.url).searchParams.get('n') ?? '0');
  const signed = outcome?.kind === 'signed' && Number.isInteger(n) ? outcome.pdfs[n] : undefined;
  if (!signed) throw new HttpError(404, 'no signed document in this browser');
  res
    .writeHead(200, {
      ...headers(ctx.options.issuer, 'application/pdf'),
      'content-disposition': contentDisposition(signed.name),
      'content-length': String(signed.pdf.length),
    })
    .end(signed.pdf);
}

/**
 * The DSS-Ext path. The SignResponse comes back as a cross-site POST (no session cookie): it is matched to
 * its request by the RequestID the e-service keeps, and verified with the service's certificate.
 */
async function dss(
  ctx: DemoContext,
  door: DemoDss,
  key: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (key === 'POST /dss/documents') {
    const form = await readUpload(req, ctx.maxUpload);
    if ('error' in form) return html(ctx, res, 400, startPage(form.error, true));
    if (form.pdfs.length !== 1)
      return html(ctx, res, 400, startPage('Choose one PDF for the Swedish protocol.', true));
    try {
      return html(
        ctx,
        res,
        200,
        dssContinuePage(`${door.doorUrl}/sign`, await door.start(form.pdfs[0]!, form.message.text)),
      );
    } catch (err) {
      if (err instanceof PdfSignatureError)
        return html(ctx, res, 400, startPage(`This PDF cannot be signed: ${err.message}`, true));
      throw err;
    }
  }
  if (key === 'POST /dss/response') {
    const outcome = await door.finish(
      new URLSearchParams((await readBody(req, ctx.maxUpload)).toString('utf8')),
    );
    if (outcome.kind === 'refused')
      return html(ctx, res, 200, dssRefusedPage(outcome.status, outcome.message));
    const id = randomBytes(16).toString('hex');
    ctx.dssSigned.set(id, { name: outcome.name, pdf: outcome.pdf });
    return html(ctx, res, 200, dssSignedPage({ id, name: outcome.name, signer: outcome.signer }));
  }
  if (key === 'GET /dss/download') {
    const signed = ctx.dssSigned.get(
      new URL(req.url ?? '/', 'http://127.0.0.1').searchParams.get('id') ?? '',
    );
    if (!signed) throw new HttpError(404, 'no such signed document');
    res
      .writeHead(200, {
        ...headers(ctx.options.issuer, 'application/pdf'),
        'content-disposition': contentDisposition(signed.name),
        'content-length': String(signed.pdf.length),
      })
      .end(signed.pdf);
    return;
  }
  throw new HttpError(404, 'no such page');
}

async function route(ctx: DemoContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
  const key = `${req.method} ${path}`;
  if (key === 'GET /') return html(ctx, res, 200, startPage(undefined, ctx.options.dss !== undefined));
  if (ctx.options.dss && key.includes(' /dss/')) return dss(ctx, ctx.options.dss, key, req, res);
  if (key === 'POST /documents') return upload(ctx, req, res);
  const [session] = ctx.sessions.of(req, false);
  if (key === 'POST /reset') {
    if (session) ctx.sessions.delete(session);
    return redirect(res, '/', `${SESSION_COOKIE}=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0`);
  }
  if (!['GET /review', 'POST /login', 'GET /callback', 'GET /result', 'GET /download'].includes(key)) {
    throw new HttpError(404, 'no such page');
  }
  if (!session)
    throw new HttpError(400, 'this browser has no signing under way (cookies off, or it expired)');
  if (key === 'GET /review') return review(ctx, session, res);
  if (key === 'POST /login') return login(ctx, session, res);
  if (key === 'GET /callback') return callback(ctx, session, req, res);
  if (key === 'GET /result') return result(ctx, session, res);
  return download(ctx, session, req, res);
}

export async function startDemoService(options: DemoServiceOptions): Promise<DemoService> {
  const ctx: DemoContext = {
    options,
    log: options.log ?? (() => undefined),
    maxUpload: options.maxUploadBytes ?? 10 * 1024 * 1024,
    sessions: new Sessions(),
    dssSigned: new Map(),
    url: '',
  };
  const server = createServer((req, res) => {
    route(ctx, req, res).catch((err: Error) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (err instanceof HttpError || err instanceof FormError) {
        html(ctx, res, err.status, errorPage(err.status, err.message));
      } else {
        ctx.log(`demo: internal error: ${err.name}: ${err.message}`);
        html(ctx, res, 500, errorPage(500, 'internal error'));
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  ctx.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: ctx.url,
    server,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
