/**
 * A demo e-service web page, built on the client modules (../src) as an e-service would build its own:
 *
 *   GET  /           choose a PDF and write the text to approve
 *   POST /documents  the upload: the PDF is checked and prepared (prepareSigning: digest of the byte
 *                    ranges, a fresh request id, the nonce binding both and the sign message)
 *   GET  /review     the document's name, its fingerprint and the text, before anyone logs in
 *   POST /login      redirects the browser to the identity provider (beginLogin: the authorization
 *                    request with PKCE, the nonce, the sign scope and the signed signRequest)
 *   GET  /callback   back from the identity provider: the code grant (completeLogin), the sign request
 *                    with the ID token (completeSigning), the signed PDF, and its validation
 *   GET  /result     what happened: signed (with the validation), cancelled, or refused
 *   GET  /download   the signed PDF
 *   POST /reset      start over
 *
 * State lives server-side per browser session (an HttpOnly, SameSite=Lax cookie); the browser only ever
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
import {
  SigningFailedError,
  completeSigning,
  prepareSigning,
  type PreparedSigning,
} from '../src/sign-document';
import {
  SigningApiError,
  type ClientSigningKey,
  type SigningClient,
  type SignMessage,
} from '../src/signing-client';
import { fingerprint } from '../../shared/html';
import { FormError, parseMultipart, readBody } from './multipart';
import {
  cancelledPage,
  errorPage,
  failedPage,
  reviewPage,
  signedPage,
  startPage,
  type ValidationSummary,
} from './pages';

export type { ValidationSummary } from './pages';

export interface DemoServiceOptions {
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

type Outcome =
  | {
      readonly kind: 'signed';
      readonly requestId: string;
      readonly certificateSerial: string;
      readonly signer: string;
      readonly level: string;
      readonly signMessageHash?: string;
      readonly pdf: Buffer;
      readonly validation?: ValidationSummary;
    }
  | { readonly kind: 'cancelled' }
  | { readonly kind: 'failed'; readonly code: string; readonly message: string };

interface Session {
  readonly id: string;
  lastUsed: number;
  documentName?: string;
  message?: SignMessage;
  prepared?: PreparedSigning;
  pending?: PendingLogin;
  outcome?: Outcome;
}

const COOKIE = 'demo_session';
/** The OAuth state of the login this browser started, sent back only to the callback. */
const LOGIN_COOKIE = 'demo_login';
const SESSION_TTL_MS = 30 * 60_000;
const MAX_SESSIONS = 200;
const MAX_MESSAGE_CHARACTERS = 1000;

class HttpError extends Error {
  public constructor(
    public readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function startDemoService(options: DemoServiceOptions): Promise<DemoService> {
  const log = options.log ?? (() => undefined);
  const maxUpload = options.maxUploadBytes ?? 10 * 1024 * 1024;
  const sessions = new Map<string, Session>();
  let url = '';

  const headers = (type: string): Record<string, string> => ({
    'content-type': type,
    'cache-control': 'no-store',
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    // form-action covers the redirect to the identity provider after POST /login.
    'content-security-policy': `default-src 'none'; style-src 'unsafe-inline'; form-action 'self' ${new URL(options.issuer).origin}; frame-ancestors 'none'`,
  });
  const html = (res: ServerResponse, status: number, body: string): void => {
    res.writeHead(status, headers('text/html; charset=utf-8')).end(body);
  };
  const redirect = (res: ServerResponse, location: string, cookie?: string): void => {
    res
      .writeHead(303, { location, 'cache-control': 'no-store', ...(cookie ? { 'set-cookie': cookie } : {}) })
      .end();
  };

  /** The browser's session, made on first use (the second value: a cookie to set). */
  const sessionOf = (req: IncomingMessage, create: boolean): [Session | undefined, string | undefined] => {
    const now = Date.now();
    for (const [id, s] of sessions) if (now - s.lastUsed > SESSION_TTL_MS) sessions.delete(id);
    const id = /(?:^|;\s*)demo_session=([A-Za-z0-9_-]{43})(?:;|$)/.exec(req.headers.cookie ?? '')?.[1];
    const found = id === undefined ? undefined : sessions.get(id);
    if (found) {
      found.lastUsed = now;
      return [found, undefined];
    }
    if (!create) return [undefined, undefined];
    if (sessions.size >= MAX_SESSIONS) {
      const oldest = [...sessions.values()].sort((a, b) => a.lastUsed - b.lastUsed)[0];
      sessions.delete(oldest.id);
    }
    const session: Session = { id: randomBytes(32).toString('base64url'), lastUsed: now };
    sessions.set(session.id, session);
    return [session, `${COOKIE}=${session.id}; HttpOnly; SameSite=Lax; Path=/`];
  };

  const upload = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const parts = parseMultipart(req.headers['content-type'], await readBody(req, maxUpload));
    const file = parts.find((p) => p.name === 'document' && p.filename !== undefined);
    const text =
      parts
        .find((p) => p.name === 'message')
        ?.data.toString('utf8')
        .replace(/\r\n/g, '\n') ?? '';
    const mimeType = parts.find((p) => p.name === 'mimeType')?.data.toString('utf8');
    if (!file || file.data.length === 0) return html(res, 400, startPage('Choose a PDF document.'));
    if (text.trim() === '' || [...text].length > MAX_MESSAGE_CHARACTERS) {
      return html(
        res,
        400,
        startPage(`Write the text to approve: 1 to ${MAX_MESSAGE_CHARACTERS} characters.`),
      );
    }
    const message: SignMessage = {
      text,
      mimeType: mimeType === 'text/markdown' ? 'text/markdown' : 'text/plain',
    };
    // What the identity provider shows (and refuses when it holds controls, direction marks or other
    // invisible characters): the file name without them.
    const documentName =
      [...(file.filename ?? '')]
        .filter((c) => !/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u115f\u1160\u3164\uffa0]/u.test(c))
        .slice(-120)
        .join('')
        .trim() || 'document.pdf';
    let prepared: PreparedSigning;
    try {
      prepared = await prepareSigning({
        document: file.data,
        pdf: true,
        signMessage: message,
        documentName,
      });
    } catch (err) {
      if (err instanceof PdfSignatureError) {
        return html(res, 400, startPage(`This PDF cannot be signed: ${err.message}`));
      }
      throw err;
    }
    const [session, cookie] = sessionOf(req, true);
    Object.assign(session!, { documentName, message, prepared, pending: undefined, outcome: undefined });
    redirect(res, '/review', cookie);
  };

  const login = async (session: Session, res: ServerResponse): Promise<void> => {
    const { prepared } = session;
    if (!prepared || !session.message) throw new HttpError(400, 'choose a document first');
    session.pending = await beginLogin({
      issuer: options.issuer,
      clientId: options.clientId,
      redirectUri: `${url}/callback`,
      nonce: prepared.nonce,
      ...(options.idTokenSignedResponseAlg
        ? { idTokenSignedResponseAlg: options.idTokenSignedResponseAlg }
        : {}),
      signature: {
        key: options.signRequestKey,
        tbsData: prepared.login.tbsData,
        signMessage: session.message,
        documentName: session.documentName,
      },
    });
    redirect(
      res,
      session.pending.authorizationUrl.href,
      `${LOGIN_COOKIE}=${session.pending.state}; HttpOnly; SameSite=Lax; Path=/callback`,
    );
  };

  /** The callback answers the login this browser started: its state is the cookie's and the pending one's. */
  const answersPendingLogin = (req: IncomingMessage, pending: PendingLogin): boolean => {
    const state = new URL(req.url ?? '/', url).searchParams.get('state');
    const cookie = new RegExp(`(?:^|;\\s*)${LOGIN_COOKIE}=([A-Za-z0-9_-]{1,128})(?:;|$)`).exec(
      req.headers.cookie ?? '',
    )?.[1];
    const same = (value: string | null | undefined): boolean => {
      const [a, b] = [Buffer.from(value ?? ''), Buffer.from(pending.state)];
      return a.length === b.length && timingSafeEqual(a, b);
    };
    return same(state) && same(cookie);
  };

  const callback = async (session: Session, req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const { pending, prepared } = session;
    if (!pending || !prepared) throw new HttpError(400, 'no login is under way in this browser');
    // Not the answer to this browser's login: refused, and the login under way stays as it was.
    if (!answersPendingLogin(req, pending)) {
      throw new HttpError(400, 'this callback does not answer the login this browser started');
    }
    // One use: a reloaded or replayed callback finds nothing to complete.
    session.pending = undefined;
    try {
      const { idToken } = await completeLogin(pending, new URL(req.url ?? '/', url));
      const signed = await completeSigning(options.signing, prepared, idToken);
      const certificate = new X509Certificate(signed.result.certificate!);
      const signer = /(?:^|\n)CN=([^\n]*)/.exec(certificate.subject)?.[1] ?? certificate.subject;
      log(`demo: request ${signed.requestId} signed`);
      const validation = await options
        .validate?.(signed.output)
        .catch((err: Error): ValidationSummary => ({ passed: false, signatures: [], error: err.message }));
      session.outcome = {
        kind: 'signed',
        requestId: signed.requestId,
        certificateSerial: signed.result.certificateSerial ?? '',
        signer,
        level: signed.level,
        ...(signed.result.signMessageHash ? { signMessageHash: signed.result.signMessageHash } : {}),
        pdf: signed.output,
        ...(validation ? { validation } : {}),
      };
    } catch (err) {
      if (err instanceof AuthorizationError && err.code === 'access_denied') {
        log('demo: the citizen cancelled at the identity provider; nothing submitted');
        session.outcome = { kind: 'cancelled' };
      } else if (
        err instanceof AuthorizationError ||
        err instanceof SigningApiError ||
        err instanceof SigningFailedError
      ) {
        log(`demo: not signed: ${err.code}`);
        session.outcome = { kind: 'failed', code: err.code, message: err.message };
      } else throw err;
    }
    redirect(res, '/result', `${LOGIN_COOKIE}=; HttpOnly; SameSite=Lax; Path=/callback; Max-Age=0`);
  };

  const result = (session: Session, res: ServerResponse): void => {
    const outcome = session.outcome;
    if (!outcome) throw new HttpError(400, 'nothing has been signed in this browser yet');
    if (outcome.kind === 'cancelled') return html(res, 200, cancelledPage());
    if (outcome.kind === 'failed') return html(res, 200, failedPage(outcome.code, outcome.message));
    html(
      res,
      200,
      signedPage({
        documentName: session.documentName ?? 'document.pdf',
        requestId: outcome.requestId,
        certificateSerial: outcome.certificateSerial,
        signer: outcome.signer,
        level: outcome.level,
        ...(outcome.signMessageHash ? { signMessageHash: outcome.signMessageHash } : {}),
        ...(outcome.validation ? { validation: outcome.validation } : {}),
      }),
    );
  };

  const download = (session: Session, res: ServerResponse): void => {
    const outcome = session.outcome;
    if (outcome?.kind !== 'signed') throw new HttpError(404, 'no signed document in this browser');
    const base = (session.documentName ?? 'document.pdf').replace(/\.pdf$/i, '');
    const ascii = `${base.replace(/[^A-Za-z0-9._-]/g, '_')}-signed.pdf`;
    res
      .writeHead(200, {
        ...headers('application/pdf'),
        'content-disposition': `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(`${base}-signed.pdf`)}`,
        'content-length': String(outcome.pdf.length),
      })
      .end(outcome.pdf);
  };

  const route = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    const key = `${req.method} ${path}`;
    if (key === 'GET /') return html(res, 200, startPage());
    if (key === 'POST /documents') return upload(req, res);
    const [session] = sessionOf(req, false);
    if (key === 'POST /reset') {
      if (session) sessions.delete(session.id);
      return redirect(res, '/', `${COOKIE}=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0`);
    }
    if (!['GET /review', 'POST /login', 'GET /callback', 'GET /result', 'GET /download'].includes(key)) {
      throw new HttpError(404, 'no such page');
    }
    if (!session)
      throw new HttpError(400, 'this browser has no signing under way (cookies off, or it expired)');
    if (key === 'GET /review') {
      if (!session.prepared || !session.message) throw new HttpError(400, 'choose a document first');
      return html(
        res,
        200,
        reviewPage({
          documentName: session.documentName ?? 'document.pdf',
          fingerprint: fingerprint(session.prepared.login.tbsData),
          messageText: session.message.text,
          mimeType: session.message.mimeType ?? 'text/plain',
        }),
      );
    }
    if (key === 'POST /login') return login(session, res);
    if (key === 'GET /callback') return callback(session, req, res);
    if (key === 'GET /result') return result(session, res);
    return download(session, res);
  };

  const server = createServer((req, res) => {
    route(req, res).catch((err: Error) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (err instanceof HttpError || err instanceof FormError) {
        html(res, err.status, errorPage(err.status, err.message));
      } else {
        log(`demo: internal error: ${err.name}: ${err.message}`);
        html(res, 500, errorPage(500, 'internal error'));
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    server,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
