/**
 * The demo page's callback over HTTP, as an attacker would play it: the victim has chosen a document and
 * started the login at the identity provider (the demo holds the pending login for the victim's browser);
 * the attacker makes the victim's browser load a /callback of the attacker's making (a link, an image).
 * Such a request carries the victim's cookies (a top-level GET is SameSite=Lax) but not the state of the
 * victim's login: it is refused, and the pending login survives; the victim's real callback then signs.
 */
import { randomBytes } from 'node:crypto';
import { loginAtLocalIdp } from '../src/oidc-login';
import { SigningClient } from '../src/signing-client';
import { startDemoService, type DemoService } from '../demo/server';
import { IDP_CLIENT_KEYS_DIR, localClientKey } from '../../local/client-keys';
import { localIssuer } from '../../local/client';
import { CLIENT_IDS } from '../../local/idp/clients';
import { TEST_CITIZENS } from '../../local/idp/citizens';
import { startLocalPipeline, type LocalPipeline } from '../../local/runner/pipeline';
import { minimalPdf } from '../../local/verify/pdf-validator';

jest.setTimeout(300_000);

let pipeline: LocalPipeline;
let demo: DemoService;

beforeAll(async () => {
  pipeline = await startLocalPipeline({
    resourcePrefix: `demo-cb-${randomBytes(3).toString('hex')}-`,
    log: () => undefined,
    env: { PORT: '0', POOL_TARGETS: 'EC-P256=2', LOCAL_KEYGEN_INTERVAL_SECONDS: '3600', LOG_LEVEL: 'WARN' },
  });
  await pipeline.runKeygen();
  demo = await startDemoService({
    signing: new SigningClient({ apiUrl: pipeline.url, apiKey: pipeline.apiKey }),
    issuer: localIssuer(),
    clientId: CLIENT_IDS.signingService,
    signRequestKey: localClientKey(CLIENT_IDS.signingService, IDP_CLIENT_KEYS_DIR),
  });
});

afterAll(async () => {
  await demo?.stop();
  await pipeline?.stop();
});

/** A browser's cookies for the demo (name=value by name; path is not modelled: every one is sent). */
class Browser {
  private readonly cookies = new Map<string, string>();

  public async request(path: string, init: RequestInit = {}): Promise<Response> {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(`${demo.url}${path}`, {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), ...(cookie ? { cookie } : {}) },
    });
    for (const set of res.headers.getSetCookie()) {
      const [pair, ...attributes] = set.split(';');
      const [name, value] = [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)];
      if (attributes.some((a) => /max-age=0/i.test(a.trim()))) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return res;
  }

  public without(name: string): Browser {
    const other = new Browser();
    for (const [k, v] of this.cookies) if (k !== name) other.cookies.set(k, v);
    return other;
  }

  public has(name: string): boolean {
    return this.cookies.has(name);
  }
}

/** The victim's browser with a login under way at the identity provider; the authorization URL. */
async function victimMidLogin(): Promise<{ victim: Browser; authorizationUrl: URL }> {
  const victim = new Browser();
  const form = new FormData();
  form.append(
    'document',
    new Blob([new Uint8Array(minimalPdf('Lease agreement'))], { type: 'application/pdf' }),
    'lease.pdf',
  );
  form.append('message', 'Jag godkänner hyresavtalet.');
  form.append('mimeType', 'text/plain');
  const uploaded = await victim.request('/documents', { method: 'POST', body: form });
  expect([uploaded.status, uploaded.headers.get('location')]).toEqual([303, '/review']);
  const login = await victim.request('/login', { method: 'POST' });
  expect(login.status).toBe(303);
  expect(victim.has('demo_login')).toBe(true);
  return { victim, authorizationUrl: new URL(login.headers.get('location')!) };
}

test('a forged callback (the victim’s cookies, not the victim’s state) is refused; the victim’s login survives and signs', async () => {
  const { victim, authorizationUrl } = await victimMidLogin();
  // The attacker's own login at the provider: a real code and state, of another login.
  const attacker = await victimMidLogin();
  const attackersCallback = await loginAtLocalIdp(
    attacker.authorizationUrl,
    `${demo.url}/callback`,
    TEST_CITIZENS[1].personalIdentityNumber,
    'sign',
  );
  const forgeries = [
    // The attacker's real callback, loaded by the victim's browser.
    `${attackersCallback.pathname}${attackersCallback.search}`,
    // A made-up one, and one without a state.
    `/callback?code=${randomBytes(16).toString('base64url')}&state=${randomBytes(32).toString('base64url')}`,
    `/callback?code=${randomBytes(16).toString('base64url')}`,
    '/callback?error=access_denied',
  ];
  for (const forged of forgeries) {
    const res = await victim.request(forged);
    expect({ forged, status: res.status }).toEqual({ forged, status: 400 });
    expect(await res.text()).toContain('does not answer the login this browser started');
  }
  // The victim's real callback without the login cookie (its session only) is refused too.
  const realCallback = await loginAtLocalIdp(
    authorizationUrl,
    `${demo.url}/callback`,
    TEST_CITIZENS[0].personalIdentityNumber,
    'sign',
  );
  const path = `${realCallback.pathname}${realCallback.search}`;
  expect((await victim.without('demo_login').request(path)).status).toBe(400);
  // With both: the pending login was still there, and it signs.
  const done = await victim.request(path);
  expect([done.status, done.headers.get('location')]).toEqual([303, '/result']);
  expect(victim.has('demo_login')).toBe(false);
  const result = await victim.request('/result');
  expect(result.status).toBe(200);
  expect(await result.text()).toMatch(/Signed/);
  // And once only: the same callback again finds nothing under way.
  expect((await victim.request(path)).status).toBe(400);
});
