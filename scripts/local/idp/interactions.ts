/**
 * The local IdP's interaction routes (its "login page"), in place of oidc-provider's devInteractions:
 *
 *   GET  /interaction/:uid          login form (prompt login) or approval form (prompt consent)
 *   POST /interaction/:uid/login    login=<personal identity number> of a test citizen; grants consent for
 *                                   what the request asked, so one form completes `prompt=login consent`
 *   POST /interaction/:uid/confirm  approval when only consent is pending (a session already exists)
 *
 * An unknown personal identity number gets the form again with an error (HTTP 400).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { errors, type InteractionDetails, type Provider } from 'oidc-provider';
import { TEST_CITIZENS, findCitizenByPersonalNumber } from './citizens';
import { escapeHtml, page } from './html';
import { INTERACTION_PREFIX } from './provider';
import { chooseAcr } from './profile';

const MAX_FORM_BYTES = 8 * 1024;

class HttpError extends Error {
  public constructor(
    public readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function send(res: ServerResponse, status: number, html: string): void {
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'x-frame-options': 'DENY',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
  });
  res.end(html);
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  if (!req.headers['content-type']?.startsWith('application/x-www-form-urlencoded')) {
    throw new HttpError(415, 'expected a form (application/x-www-form-urlencoded)');
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) throw new HttpError(413, 'form too large');
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function loginPage(details: InteractionDetails, error?: string): string {
  const citizens = TEST_CITIZENS.map(
    (c) =>
      `<li><code>${c.personalIdentityNumber}</code> ${escapeHtml(c.name)} (${c.loa.split('/').pop()})</li>`,
  ).join('\n');
  return page(
    'Log in',
    `<p>Logging in to <strong>${escapeHtml(String(details.params.client_id))}</strong>.</p>
${error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : ''}
<form method="post" action="${INTERACTION_PREFIX}${escapeHtml(details.uid)}/login">
<label for="login">Personal identity number (12 digits)</label>
<input id="login" name="login" inputmode="numeric" autocomplete="off" pattern="[0-9]{12}" required autofocus>
<button type="submit">Log in</button>
</form>
<details><summary>Test citizens</summary><ul>
${citizens}
</ul></details>`,
  );
}

function consentPage(details: InteractionDetails): string {
  const scope = String(details.params.scope ?? '');
  return page(
    'Approve',
    `<p><strong>${escapeHtml(String(details.params.client_id))}</strong> asks for: <code>${escapeHtml(scope)}</code></p>
<form method="post" action="${INTERACTION_PREFIX}${escapeHtml(details.uid)}/confirm">
<button type="submit">Approve</button>
</form>`,
  );
}

/** Names of the claims the request's claims parameter asks for (ID token and userinfo). */
function requestedClaimNames(params: InteractionDetails['params']): string[] {
  if (typeof params.claims !== 'string') return [];
  const parsed = JSON.parse(params.claims) as Record<string, Record<string, unknown> | undefined>;
  return [...new Set([...Object.keys(parsed.id_token ?? {}), ...Object.keys(parsed.userinfo ?? {})])];
}

/**
 * The acr values the request asks for, as oidc-provider reads them: acr_values when present (voluntary),
 * otherwise the claims parameter's id_token.acr (value or values, essential or not).
 */
function requestedAcr(params: InteractionDetails['params']): { values: string[]; essential: boolean } {
  if (typeof params.acr_values === 'string') {
    return { values: params.acr_values.split(' ').filter(Boolean), essential: false };
  }
  if (typeof params.claims !== 'string') return { values: [], essential: false };
  const acr = (JSON.parse(params.claims) as { id_token?: { acr?: Record<string, unknown> | null } }).id_token
    ?.acr;
  if (!acr) return { values: [], essential: false };
  const values = [acr.value, ...(Array.isArray(acr.values) ? acr.values : [])].filter(
    (v): v is string => typeof v === 'string',
  );
  return { values, essential: acr.essential === true };
}

/** Consent for everything the request asked (scope and claims), on the session's grant when it is this account's. */
async function grantRequested(
  provider: Provider,
  details: InteractionDetails,
  accountId: string,
): Promise<string> {
  const existing =
    details.grantId !== undefined && details.session?.accountId === accountId
      ? await provider.Grant.find(details.grantId)
      : undefined;
  const grant = existing ?? new provider.Grant({ accountId, clientId: String(details.params.client_id) });
  grant.addOIDCScope(String(details.params.scope ?? 'openid'));
  const claims = requestedClaimNames(details.params);
  if (claims.length > 0) grant.addOIDCClaims(claims);
  return grant.save();
}

async function login(
  provider: Provider,
  req: IncomingMessage,
  res: ServerResponse,
  details: InteractionDetails,
): Promise<void> {
  if (details.prompt.name !== 'login') throw new HttpError(400, 'no login is pending in this interaction');
  const personalIdentityNumber = (await readForm(req)).get('login')?.trim() ?? '';
  const citizen = findCitizenByPersonalNumber(personalIdentityNumber);
  if (!citizen) {
    send(res, 400, loginPage(details, 'Unknown personal identity number: not one of the test citizens.'));
    return;
  }
  const requested = requestedAcr(details.params);
  const acr = chooseAcr(citizen.loa, requested.values, requested.essential);
  if (acr === undefined) {
    await provider.interactionFinished(req, res, {
      error: 'unmet_authentication_requirements',
      error_description: 'the essential acr requested cannot be met by this eID',
    });
    return;
  }
  const grantId = await grantRequested(provider, details, citizen.sub);
  await provider.interactionFinished(
    req,
    res,
    { login: { accountId: citizen.sub, acr, remember: false }, consent: { grantId } },
    { mergeWithLastSubmission: false },
  );
}

async function confirm(
  provider: Provider,
  req: IncomingMessage,
  res: ServerResponse,
  details: InteractionDetails,
): Promise<void> {
  const accountId = details.session?.accountId;
  if (details.prompt.name !== 'consent' || accountId === undefined) {
    throw new HttpError(400, 'no consent is pending in this interaction');
  }
  await readForm(req);
  const grantId = await grantRequested(provider, details, accountId);
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

/** Serves a request under /interaction/ (the caller routes everything else to oidc-provider). */
export async function handleInteraction(
  provider: Provider,
  req: IncomingMessage,
  res: ServerResponse,
  log: (line: string) => void,
): Promise<void> {
  try {
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    const [uid, action = ''] = path.slice(INTERACTION_PREFIX.length).split('/');
    const route = `${req.method} ${action}`;
    if (!['GET ', 'POST login', 'POST confirm'].includes(route)) throw new HttpError(404, 'not found');
    // The interaction comes from its cookie; the uid in the path must be that one.
    const details = await provider.interactionDetails(req, res);
    if (details.uid !== uid) throw new HttpError(400, 'this page belongs to another login');
    if (route === 'POST login') await login(provider, req, res, details);
    else if (route === 'POST confirm') await confirm(provider, req, res, details);
    else if (details.prompt.name === 'login') send(res, 200, loginPage(details));
    else if (details.prompt.name === 'consent') send(res, 200, consentPage(details));
    else throw new HttpError(400, `unsupported prompt ${details.prompt.name}`);
  } catch (err) {
    if (res.headersSent) {
      log(`interaction failed after the response started: ${(err as Error).message}`);
      res.destroy();
    } else if (err instanceof HttpError) {
      send(res, err.status, page('Error', `<p class="error">${escapeHtml(err.message)}</p>`));
    } else if (err instanceof errors.SessionNotFound) {
      send(res, 400, page('Error', '<p class="error">This login has expired or its cookie is missing.</p>'));
    } else {
      log(`interaction failed: ${(err as Error).name}: ${(err as Error).message}`);
      send(res, 500, page('Error', '<p class="error">Internal error.</p>'));
    }
  }
}
