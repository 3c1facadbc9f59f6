/** The demo e-service's pages: server-rendered HTML, no scripts, no external resources. */
import { escapeHtml, sitePage, type Site } from '../../shared/html';

const DEMO: Site = {
  name: 'demo e-service',
  header:
    '<header><p>Demo e-service: sign a PDF with your eID (local signing pipeline, test citizens only)</p></header>',
  style: [
    'body{max-width:40em}',
    'header{background:#2d4a22;color:#fff;padding:.6em 1em;border-radius:4px}header p{margin:0}',
    'label{display:block;font-weight:bold;margin:1em 0 .3em}',
    'textarea{width:100%;font:inherit;padding:.4em}input[type=file]{font-size:1em}',
    'button,.button{margin:.8em .6em .4em 0;border:1px solid #2d4a22;background:#3b6b2c;color:#fff;text-decoration:none;display:inline-block}',
    'button.secondary{background:#fff;color:#2d4a22}',
    '.message{white-space:pre-wrap;border:2px solid #3b6b2c;border-radius:6px;padding:.8em 1em;background:#f5faf2}',
    '.passed{color:#1d6b1d}.failed{color:#a00}.note{color:#444;font-size:.95em}',
    'dd{margin:0 0 .6em 0}',
    'fieldset{border:1px solid #bbb;border-radius:4px}',
  ].join(''),
};

function page(title: string, body: string): string {
  return sitePage(DEMO, title, body);
}

export const DEFAULT_MESSAGE = 'I have read the document and I approve its content.';

export function startPage(error?: string, dss = false): string {
  return page(
    'Sign a PDF',
    `${error ? `<p class="failed" role="alert">${escapeHtml(error)}</p>` : ''}
<p>Choose one PDF or several and write the text you will approve. Your identity provider shows that
text, the documents' names and a fingerprint before you sign, once for all of them; the signing service
certifies a one-time key for exactly the person who logged in and signs every document with it.</p>
<form method="post" action="/documents" enctype="multipart/form-data">
<label for="document">PDF documents (one or more)</label>
<input type="file" id="document" name="document" accept="application/pdf,.pdf" multiple required>
<label for="message">Text to approve (at most 1000 characters)</label>
<textarea id="message" name="message" rows="4" maxlength="1000" required>${escapeHtml(DEFAULT_MESSAGE)}</textarea>
<fieldset>
<legend>The text is</legend>
<label><input type="radio" name="mimeType" value="text/plain" checked> plain text</label>
<label><input type="radio" name="mimeType" value="text/markdown"> Markdown</label>
</fieldset>
<button type="submit" id="continue">Continue</button>
</form>${
      dss
        ? `
<h2>Sign with the Swedish protocol</h2>
<p>As a Swedish e-service does: a signed DSS-Ext sign request through your browser, a SAML login that shows
the text, one PDF signed.</p>
<form method="post" action="/dss/documents" enctype="multipart/form-data">
<label for="dss-document">PDF document</label>
<input type="file" id="dss-document" name="document" accept="application/pdf,.pdf" required>
<label for="dss-message">Text to approve (at most 1000 characters)</label>
<textarea id="dss-message" name="message" rows="3" maxlength="1000" required>${escapeHtml(DEFAULT_MESSAGE)}</textarea>
<button type="submit" id="dss-sign">Sign with the Swedish protocol</button>
</form>`
        : ''
    }`,
  );
}

/** The signed SignRequest, posted to the door when the citizen continues (this page runs no script). */
export function dssContinuePage(action: string, fields: Readonly<Record<string, string>>): string {
  return page(
    'Sign with the Swedish protocol',
    `<p>The e-service's signed sign request is ready. Continue to the signing service, which sends you to
your identity provider to log in and approve the text.</p>
<form method="post" action="${escapeHtml(action)}">${Object.entries(fields)
      .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
      .join('')}
<button type="submit" id="dss-continue">Continue to sign</button>
</form>`,
  );
}

export function dssSignedPage(options: {
  readonly id: string;
  readonly name: string;
  readonly signer: string;
}): string {
  return page(
    'Signed with the Swedish protocol',
    `<p class="signed" id="dss-signed">${escapeHtml(options.name)} is signed for ${escapeHtml(options.signer)}.</p>
<p>A PAdES baseline B signature: DSS-Ext returns the signature; time-stamps and validation data are the
e-service's to add.</p>
<p><a id="dss-download" href="/dss/download?id=${escapeHtml(options.id)}">Download the signed PDF</a></p>
<p><a href="/">Sign another</a></p>`,
  );
}

export function dssRefusedPage(status: string, message?: string): string {
  return page(
    'Not signed',
    `<p class="failed" role="alert" id="dss-refused">The signing service answered <code>${escapeHtml(status)}</code>${
      message ? `: ${escapeHtml(message)}` : ''
    }.</p>
<p><a href="/">Start over</a></p>`,
  );
}

export function reviewPage(options: {
  readonly documentNames: readonly string[];
  readonly fingerprint: string;
  readonly messageText: string;
  readonly mimeType: string;
}): string {
  const several = options.documentNames.length > 1;
  const documents = several
    ? `<dt>Documents (${options.documentNames.length}), signed under one login</dt><dd><ol id="documents">${options.documentNames
        .map((name) => `<li>${escapeHtml(name)}</li>`)
        .join('')}</ol></dd>
<dt>Fingerprint (SHA-256 of the list of the documents and their digests)</dt>`
    : `<dt>Document</dt><dd id="document-name">${escapeHtml(options.documentNames[0])}</dd>
<dt>Fingerprint (SHA-256 of the signed byte ranges)</dt>`;
  return page(
    'Review before signing',
    `<dl>
${documents}<dd><code id="fingerprint">${escapeHtml(options.fingerprint)}</code></dd>
</dl>
<h2 id="message-heading">The text you are about to approve</h2>
<div class="message" id="sign-message" aria-labelledby="message-heading">${escapeHtml(options.messageText)}</div>
<p class="note">${
      options.mimeType === 'text/markdown' ? 'Your identity provider shows it formatted as Markdown. ' : ''
    }${several ? 'It shows the numbered list of the documents below it. ' : ''}Compare it, and the fingerprint, with what your identity provider shows you.</p>
<form method="post" action="/login">
<button type="submit" id="sign">Sign with eID</button>
</form>
<form method="post" action="/reset">
<button type="submit" class="secondary">Start over</button>
</form>`,
  );
}

export interface ValidationSummary {
  /** Every signature of the PDF passed. */
  readonly passed: boolean;
  readonly signatures: ReadonlyArray<{
    readonly indication: string;
    readonly subIndication?: string;
    readonly format?: string;
    readonly signer?: string;
    readonly chainTrusted?: boolean;
    readonly signingTime?: string;
  }>;
  /** The validator could not run. */
  readonly error?: string;
}

function validationHtml(validation: ValidationSummary | undefined, id = 'validation'): string {
  if (!validation) return '<p class="note">No validator is configured.</p>';
  if (validation.error) {
    return `<p class="failed" id="${id}">The validator could not run: ${escapeHtml(validation.error)}</p>`;
  }
  const rows = validation.signatures
    .map(
      (s) =>
        `<li><strong class="${s.indication === 'TOTAL_PASSED' ? 'passed' : 'failed'}">${escapeHtml(
          s.subIndication ? `${s.indication} (${s.subIndication})` : s.indication,
        )}</strong>, ${escapeHtml(s.format ?? 'no format')}; signer ${escapeHtml(s.signer ?? 'unknown')}; chain trusted: ${
          s.chainTrusted ? 'yes' : 'no'
        }${s.signingTime ? `; signing time ${escapeHtml(s.signingTime)}` : ''}</li>`,
    )
    .join('\n');
  return `<p id="${id}" class="${validation.passed ? 'passed' : 'failed'}">${
    validation.passed ? 'Every signature passed' : 'Not every signature passed'
  } (EU DSS validator, trusting the local root CA only).</p>
<ul>${rows}</ul>`;
}

/**
 * The result: one signed PDF (its download `#download`, level `#level`, validation `#validation`), or
 * several signed under one login, each with its own (`#download-<n>`, `#level-<n>`, `#validation-<n>`).
 */
export function signedPage(options: {
  readonly requestId: string;
  readonly certificateSerial: string;
  readonly signer: string;
  readonly signMessageHash?: string;
  readonly pdfs: ReadonlyArray<{
    readonly name: string;
    /** The AdES level the signed PDF reached. */
    readonly level: string;
    readonly validation?: ValidationSummary;
  }>;
}): string {
  const several = options.pdfs.length > 1;
  const details = `<dl>
<dt>Signer (from the one-time certificate)</dt><dd id="signer">${escapeHtml(options.signer)}</dd>
<dt>Sign request</dt><dd><code id="request-id">${escapeHtml(options.requestId)}</code></dd>
<dt>Certificate serial</dt><dd><code id="certificate-serial">${escapeHtml(options.certificateSerial)}</code></dd>
${options.signMessageHash ? `<dt>Hash of the approved text</dt><dd><code id="sign-message-hash">${escapeHtml(options.signMessageHash)}</code></dd>` : ''}
</dl>`;
  if (!several) {
    const [pdf] = options.pdfs;
    return page(
      'Signed',
      `<p class="passed" role="status" id="outcome">The document is signed.</p>
<p><a class="button" id="download" href="/download">Download the signed PDF</a></p>
<dl>
<dt>Document</dt><dd>${escapeHtml(pdf.name)}</dd>
<dt>Level</dt><dd id="level">PAdES ${escapeHtml(pdf.level)}</dd>
</dl>
${details}
<h2>Validation</h2>
${validationHtml(pdf.validation)}
<form method="post" action="/reset"><button type="submit" class="secondary">Sign another document</button></form>`,
    );
  }
  const documents = options.pdfs
    .map(
      (pdf, n) => `<section aria-labelledby="document-${n}">
<h3 id="document-${n}">${n + 1}. ${escapeHtml(pdf.name)}</h3>
<p><a class="button" id="download-${n}" href="/download?n=${n}">Download the signed PDF</a> Level: <span id="level-${n}">PAdES ${escapeHtml(pdf.level)}</span></p>
${validationHtml(pdf.validation, `validation-${n}`)}
</section>`,
    )
    .join('\n');
  return page(
    'Signed',
    `<p class="passed" role="status" id="outcome">The ${options.pdfs.length} documents are signed, under one login and one certificate.</p>
${details}
<h2>Documents</h2>
${documents}
<form method="post" action="/reset"><button type="submit" class="secondary">Sign other documents</button></form>`,
  );
}

export function cancelledPage(): string {
  return page(
    'Not signed',
    `<p role="status" id="outcome">You cancelled at the identity provider. Nothing was signed.</p>
<form method="post" action="/reset"><button type="submit">Start over</button></form>`,
  );
}

export function failedPage(code: string, message: string): string {
  return page(
    'Not signed',
    `<p class="failed" role="alert" id="outcome">The document was not signed: <code>${escapeHtml(code)}</code> ${escapeHtml(message)}</p>
<form method="post" action="/reset"><button type="submit">Start over</button></form>`,
  );
}

export function errorPage(status: number, message: string): string {
  return page(
    status === 404 ? 'Not found' : 'Something went wrong',
    `<p class="failed" role="alert">${escapeHtml(message)}</p><p><a href="/">Start over</a></p>`,
  );
}
