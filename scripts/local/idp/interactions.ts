/**
 * The local IdP's interaction routes (its "login page"), in place of oidc-provider's devInteractions:
 *
 *   GET  /interaction/:uid          login form (prompt login), the signature page once a citizen logged
 *                                   in for a signature request, or the approval form (prompt consent)
 *   POST /interaction/:uid/login    login=<personal identity number> of a test citizen. For a login: grants
 *                                   consent for what the request asked, so one form completes
 *                                   `prompt=login consent`. For a signature request (the sign scope of the
 *                                   signature extension): remembers the citizen and shows the signature page
 *   POST /interaction/:uid/approve  the citizen signs: the approval is made, login and consent complete
 *                                   together (auth_time is the time of the signature, extension 3.2.1)
 *   POST /interaction/:uid/cancel   the citizen declines: the client gets `access_denied`
 *   POST /interaction/:uid/confirm  approval when only consent is pending (a session already exists)
 *
 * An unknown personal identity number gets the form again with an error (HTTP 400).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { errors, type InteractionDetails, type Provider } from 'oidc-provider';
import { TEST_CITIZENS, findCitizenByPersonalNumber, findCitizenBySub, type TestCitizen } from './citizens';
import { IDP_CLIENTS } from './clients';
import { escapeHtml, fingerprint } from '../../shared/html';
import { page, renderSignMessage } from './html';
import { INTERACTION_PREFIX, authorizationEndpoint, type IdpOptions } from './provider';
import { SWEDISH_CLAIMS, chooseAcr, type Loa } from './profile';
import {
  PARAM_SIGN_REQUEST,
  SCOPE_SIGN,
  fingerprintLabel,
  isManifestHash,
  preferredLanguages,
  SignRequestError,
  readSignRequest,
  readSignRequestValue,
  readUserMessage,
  PARAM_USER_MESSAGE,
  signApproval,
  type SignRequest,
} from './sign-request';

const MAX_FORM_BYTES = 8 * 1024;
/** As the provider's Interaction TTL. */
const PENDING_TTL_MS = 600_000;

class HttpError extends Error {
  public constructor(
    public readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Citizens who logged in for a signature request and have not signed or cancelled yet, by interaction,
 * with the languages they asked for at the login: the page shows, and the approval attests, the message
 * chosen by these, whatever a later request's headers say.
 */
interface PendingSignature {
  readonly sub: string;
  readonly acr: Loa;
  readonly languages: readonly string[];
  readonly expiresAt: number;
}
const pendingSignatures = new Map<string, PendingSignature>();

function pendingOf(uid: string): PendingSignature | undefined {
  const now = Date.now();
  for (const [id, entry] of pendingSignatures) if (entry.expiresAt <= now) pendingSignatures.delete(id);
  return pendingSignatures.get(uid);
}

/**
 * An HTML answer. Its forms post here and end in a redirect to the client's (registered, already checked)
 * redirect URI, which browsers hold to form-action as well: that origin is allowed beside this one. A
 * loopback client (this provider's clients all are) may send the browser on to another loopback app, as
 * the signing service's CSC callback does to a native CSC client (RFC 8252): then any loopback port.
 */
function send(res: ServerResponse, status: number, html: string, details?: InteractionDetails): void {
  let client = '';
  try {
    const redirect = new URL(String(details?.params.redirect_uri));
    client =
      redirect.hostname === '127.0.0.1' ? ` ${redirect.origin} http://127.0.0.1:*` : ` ${redirect.origin}`;
  } catch {
    // No redirect URI (an error page before the interaction was found): this origin only.
  }
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'x-frame-options': 'DENY',
    'content-security-policy': `default-src 'none'; style-src 'unsafe-inline'; form-action 'self'${client}`,
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

const isSignRequest = (details: InteractionDetails): boolean =>
  String(details.params.scope ?? '')
    .split(' ')
    .includes(SCOPE_SIGN);

const clientName = (details: InteractionDetails): string => {
  const id = String(details.params.client_id);
  return IDP_CLIENTS.find((c) => c.client_id === id)?.client_name ?? id;
};

const action = (details: InteractionDetails, name: string): string =>
  `${INTERACTION_PREFIX}${escapeHtml(details.uid)}/${name}`;

function cancelForm(details: InteractionDetails, label: string): string {
  return `<form method="post" action="${action(details, 'cancel')}">
<button type="submit" class="secondary">${escapeHtml(label)}</button>
</form>`;
}

/**
 * The client's user message (OIDC.Sweden.Params 2.1), in the citizen's language, shown at the login;
 * none when the request has none (it was checked at the authorization endpoint).
 */
function userMessageHtml(details: InteractionDetails, languages: readonly string[]): string {
  const value = details.params[PARAM_USER_MESSAGE];
  if (value === undefined) return '';
  const { message, lang } = readUserMessage(value, languages);
  return `<section class="message" aria-label="Message from ${escapeHtml(clientName(details))}">
<div id="user-message"${lang ? ` lang="${escapeHtml(lang)}"` : ''}>
${renderSignMessage(message.text, message.mimeType)}
</div>
</section>`;
}

function loginPage(details: InteractionDetails, languages: readonly string[], error?: string): string {
  const signing = isSignRequest(details);
  const citizens = TEST_CITIZENS.map(
    (c) =>
      `<li><code>${c.personalIdentityNumber}</code> ${escapeHtml(c.name)} (${c.loa.split('/').pop()})</li>`,
  ).join('\n');
  return page(
    signing ? 'Log in to sign' : 'Log in',
    `<p>${signing ? 'Signing for' : 'Logging in to'} <strong>${escapeHtml(clientName(details))}</strong>.${
      signing ? ' After you have logged in you will see what you are asked to sign.' : ''
    }</p>
${userMessageHtml(details, languages)}
${error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : ''}
<form method="post" action="${action(details, 'login')}">
<label for="login">Personal identity number (12 digits)</label>
<input id="login" name="login" inputmode="numeric" autocomplete="off" pattern="[0-9]{12}" required autofocus>
<button type="submit">Log in</button>
</form>
${signing ? cancelForm(details, 'Cancel signing') : ''}
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
<form method="post" action="${action(details, 'confirm')}">
<button type="submit">Approve</button>
</form>`,
  );
}

/** The signature page: who signs, the document and its fingerprint, the sign message; sign or cancel. */
function signPage(details: InteractionDetails, citizen: TestCitizen, request: SignRequest): string {
  const lang = request.lang ? ` lang="${escapeHtml(request.lang)}"` : '';
  return page(
    'Sign',
    `<p><strong>${escapeHtml(clientName(details))}</strong> asks you to sign with your eID.</p>
<p>Signing as <strong>${escapeHtml(citizen.name)}</strong>, personal identity number <code>${citizen.personalIdentityNumber}</code>.</p>
<section aria-labelledby="document-heading">
<h2 id="document-heading">${isManifestHash(request.tbsData) ? 'Documents (listed below)' : 'Document'}</h2>
<dl>
${request.documentName ? `<dt>Name</dt><dd id="document-name">${escapeHtml(request.documentName)}</dd>` : ''}
<dt>Fingerprint (${escapeHtml(fingerprintLabel(request.tbsData))})</dt><dd><code id="fingerprint">${fingerprint(request.tbsData)}</code></dd>
</dl>
</section>
<section class="message" aria-labelledby="message-heading">
<h2 id="message-heading">What you approve</h2>
<div id="sign-message"${lang}>
${renderSignMessage(request.message.text, request.message.mimeType)}
</div>
</section>
<p>Signing is the same as your handwritten signature. Only sign if you agree with the text above.</p>
<div class="actions">
<form method="post" action="${action(details, 'approve')}">
<button type="submit" id="approve">Sign</button>
</form>
${cancelForm(details, 'Cancel')}
</div>`,
  );
}

/** Names of the claims the request's claims parameter asks for (ID token and userinfo). */
function requestedClaimNames(params: InteractionDetails['params']): string[] {
  if (typeof params.claims !== 'string') return [];
  const parsed = JSON.parse(params.claims) as Record<string, Record<string, unknown> | undefined>;
  return [...new Set([...Object.keys(parsed.id_token ?? {}), ...Object.keys(parsed.userinfo ?? {})])];
}

/**
 * The personal identity number a signature request requires of its signer, if any: the claims
 * parameter's id_token personalIdentityNumber marked essential with a value (extension 4.1.1).
 */
function requiredPersonalNumber(params: InteractionDetails['params']): string | undefined {
  if (typeof params.claims !== 'string') return undefined;
  const claim = (JSON.parse(params.claims) as { id_token?: Record<string, Record<string, unknown> | null> })
    .id_token?.[SWEDISH_CLAIMS.personalIdentityNumber];
  return claim?.essential === true && typeof claim.value === 'string' ? claim.value : undefined;
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

/**
 * Consent for everything the request asked (scope and claims), on the session's grant when it is this
 * account's; a signature always gets a grant of its own (its approval is kept by grant).
 */
async function grantRequested(
  provider: Provider,
  details: InteractionDetails,
  accountId: string,
  fresh = false,
): Promise<string> {
  const existing =
    !fresh && details.grantId !== undefined && details.session?.accountId === accountId
      ? await provider.Grant.find(details.grantId)
      : undefined;
  const grant = existing ?? new provider.Grant({ accountId, clientId: String(details.params.client_id) });
  grant.addOIDCScope(String(details.params.scope ?? 'openid'));
  const claims = requestedClaimNames(details.params);
  if (claims.length > 0) grant.addOIDCClaims(claims);
  return grant.save();
}

/**
 * The signature request of this interaction, verified again (it was at the authorization endpoint), its
 * message in the first of `languages` it has.
 */
async function signRequestOf(
  options: IdpOptions,
  details: InteractionDetails,
  languages: readonly string[],
): Promise<SignRequest> {
  const clientId = String(details.params.client_id);
  const keys = options.signClients.get(clientId);
  if (!keys) throw new HttpError(400, 'this client may not ask for signatures');
  const parameter = details.params[PARAM_SIGN_REQUEST];
  const fromRequestObject = options.requestObjectSignRequests.get(parameter, clientId);
  if (fromRequestObject) {
    // Its Request Object was verified at the authorization endpoint; its exp still holds.
    if (Math.floor(Date.now() / 1000) >= fromRequestObject.exp) {
      throw new HttpError(400, 'the Request Object holding the signRequest has expired (exp)');
    }
    try {
      return readSignRequestValue(fromRequestObject.value, languages);
    } catch (err) {
      throw err instanceof SignRequestError ? new HttpError(400, err.message) : err;
    }
  }
  return readSignRequest(parameter, {
    clientId,
    clientJwks: keys,
    issuer: options.issuer,
    authorizationEndpoint: authorizationEndpoint(options),
    languages,
  }).catch((err: Error) => {
    throw err instanceof SignRequestError ? new HttpError(400, err.message) : err;
  });
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
    send(
      res,
      400,
      loginPage(
        details,
        preferredLanguages(details.params.ui_locales, req.headers['accept-language']),
        'Unknown personal identity number: not one of the test citizens.',
      ),
      details,
    );
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
  if (isSignRequest(details)) {
    // The sign message is shown only to the person the request names, if it names one (extension 5.1).
    const required = requiredPersonalNumber(details.params);
    if (required !== undefined && required !== citizen.personalIdentityNumber) {
      await provider.interactionFinished(req, res, {
        error: 'access_denied',
        error_description: 'the citizen who logged in is not the one the signature request names',
      });
      return;
    }
    pendingSignatures.set(details.uid, {
      sub: citizen.sub,
      acr,
      languages: preferredLanguages(details.params.ui_locales, req.headers['accept-language']),
      expiresAt: Date.now() + PENDING_TTL_MS,
    });
    res
      .writeHead(303, { location: `${INTERACTION_PREFIX}${details.uid}`, 'cache-control': 'no-store' })
      .end();
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

/**
 * The citizen signs: the approval (who, which data, which message, when) is made and kept for the ID
 * token, and the interaction completes with the login and the consent at this moment. The login is not
 * remembered: a signature is never the start of a single sign-on session (extension 5.1).
 */
async function approve(
  provider: Provider,
  options: IdpOptions,
  req: IncomingMessage,
  res: ServerResponse,
  details: InteractionDetails,
): Promise<void> {
  await readForm(req);
  const pending = pendingOf(details.uid);
  if (!isSignRequest(details) || !pending)
    throw new HttpError(400, 'no signature is pending in this interaction');
  const request = await signRequestOf(options, details, pending.languages);
  const clientId = String(details.params.client_id);
  const alg = IDP_CLIENTS.find((c) => c.client_id === clientId)?.id_token_signed_response_alg ?? 'RS256';
  const approvedAt = Math.floor(Date.now() / 1000);
  const grantId = await grantRequested(provider, details, pending.sub, true);
  options.approvals.put(
    grantId,
    await signApproval({
      jwks: options.jwks,
      alg,
      issuer: options.issuer,
      subject: pending.sub,
      clientId,
      nonce: String(details.params.nonce ?? ''),
      request,
      approvedAt,
    }),
  );
  pendingSignatures.delete(details.uid);
  await provider.interactionFinished(
    req,
    res,
    {
      login: { accountId: pending.sub, acr: pending.acr, remember: false, ts: approvedAt },
      consent: { grantId },
    },
    { mergeWithLastSubmission: false },
  );
}

/** The citizen declines (on the login or the signature page): the standard OAuth error, nothing approved. */
async function cancel(
  provider: Provider,
  req: IncomingMessage,
  res: ServerResponse,
  details: InteractionDetails,
): Promise<void> {
  await readForm(req);
  if (!isSignRequest(details)) throw new HttpError(400, 'only a signature can be cancelled here');
  pendingSignatures.delete(details.uid);
  await provider.interactionFinished(req, res, {
    error: 'access_denied',
    error_description: 'the citizen cancelled the signature',
  });
}

async function confirm(
  provider: Provider,
  req: IncomingMessage,
  res: ServerResponse,
  details: InteractionDetails,
): Promise<void> {
  const accountId = details.session?.accountId;
  if (details.prompt.name !== 'consent' || accountId === undefined || isSignRequest(details)) {
    throw new HttpError(400, 'no consent is pending in this interaction');
  }
  await readForm(req);
  const grantId = await grantRequested(provider, details, accountId);
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

/** GET: the page for where the interaction stands. */
async function show(
  options: IdpOptions,
  req: IncomingMessage,
  res: ServerResponse,
  details: InteractionDetails,
): Promise<void> {
  const languages = preferredLanguages(details.params.ui_locales, req.headers['accept-language']);
  const pending = isSignRequest(details) ? pendingOf(details.uid) : undefined;
  const citizen = pending && findCitizenBySub(pending.sub);
  if (pending && citizen) {
    send(
      res,
      200,
      signPage(details, citizen, await signRequestOf(options, details, pending.languages)),
      details,
    );
  } else if (details.prompt.name === 'login') send(res, 200, loginPage(details, languages), details);
  else if (details.prompt.name === 'consent' && !isSignRequest(details)) {
    send(res, 200, consentPage(details), details);
  } else throw new HttpError(400, `unsupported prompt ${details.prompt.name}`);
}

/** Serves a request under /interaction/ (the caller routes everything else to oidc-provider). */
export async function handleInteraction(
  provider: Provider,
  options: IdpOptions,
  req: IncomingMessage,
  res: ServerResponse,
  log: (line: string) => void,
): Promise<void> {
  try {
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    const [uid, name = ''] = path.slice(INTERACTION_PREFIX.length).split('/');
    const route = `${req.method} ${name}`;
    if (!['GET ', 'POST login', 'POST confirm', 'POST approve', 'POST cancel'].includes(route)) {
      throw new HttpError(404, 'not found');
    }
    // The interaction comes from its cookie; the uid in the path must be that one.
    const details = await provider.interactionDetails(req, res);
    if (details.uid !== uid) throw new HttpError(400, 'this page belongs to another login');
    if (route === 'POST login') await login(provider, req, res, details);
    else if (route === 'POST approve') await approve(provider, options, req, res, details);
    else if (route === 'POST cancel') await cancel(provider, req, res, details);
    else if (route === 'POST confirm') await confirm(provider, req, res, details);
    else await show(options, req, res, details);
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
