/**
 * The demo's state per browser: a session made on first use, found by an HttpOnly, SameSite=Lax cookie
 * holding only its random id, dropped after SESSION_TTL_MS unused or when MAX_SESSIONS are held.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { PendingLogin } from '../src/oidc-login';
import type { DemoSigning, SignedPdf } from './signing';
import type { ValidationSummary } from './pages';

export type Outcome =
  | {
      readonly kind: 'signed';
      readonly requestId: string;
      readonly certificateSerial: string;
      readonly signer: string;
      readonly signMessageHash?: string;
      /** In the order they were chosen, each with its validation. */
      readonly pdfs: ReadonlyArray<SignedPdf & { readonly validation?: ValidationSummary }>;
    }
  | { readonly kind: 'cancelled' }
  | { readonly kind: 'failed'; readonly code: string; readonly message: string };

export interface Session {
  readonly id: string;
  lastUsed: number;
  signing?: DemoSigning;
  pending?: PendingLogin;
  outcome?: Outcome;
}

export const SESSION_COOKIE = 'demo_session';
const SESSION_TTL_MS = 30 * 60_000;
const MAX_SESSIONS = 200;

export class Sessions {
  private readonly sessions = new Map<string, Session>();

  /** The browser's session, made on first use with `create` (the second value: a cookie to set). */
  public of(req: IncomingMessage, create: boolean): [Session | undefined, string | undefined] {
    const now = Date.now();
    for (const [id, s] of this.sessions) if (now - s.lastUsed > SESSION_TTL_MS) this.sessions.delete(id);
    const id = /(?:^|;\s*)demo_session=([A-Za-z0-9_-]{43})(?:;|$)/.exec(req.headers.cookie ?? '')?.[1];
    const found = id === undefined ? undefined : this.sessions.get(id);
    if (found) {
      found.lastUsed = now;
      return [found, undefined];
    }
    if (!create) return [undefined, undefined];
    if (this.sessions.size >= MAX_SESSIONS) {
      const oldest = [...this.sessions.values()].sort((a, b) => a.lastUsed - b.lastUsed)[0];
      this.sessions.delete(oldest.id);
    }
    const session: Session = { id: randomBytes(32).toString('base64url'), lastUsed: now };
    this.sessions.set(session.id, session);
    return [session, `${SESSION_COOKIE}=${session.id}; HttpOnly; SameSite=Lax; Path=/`];
  }

  public delete(session: Session): void {
    this.sessions.delete(session.id);
  }
}
