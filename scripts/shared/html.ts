/**
 * What the pages of the local web tools (the demo e-service in scripts/client/demo, the local identity
 * provider in scripts/local/idp) share: escaping, the page's frame and its base style, and the fingerprint
 * of the data to be signed, which both show to the citizen.
 */

export function escapeHtml(value: string): string {
  return value.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  );
}

/** The rules every page has; a site adds its width, colours and own elements. */
const BASE_STYLE = [
  'body{font-family:system-ui,sans-serif;margin:2em auto;padding:0 1em;line-height:1.5;color:#1b1b1b}',
  'button,.button{font-size:1.05em;padding:.5em 1.2em;border-radius:4px;cursor:pointer}',
  'button:focus-visible,a:focus-visible,textarea:focus-visible,input:focus-visible,select:focus-visible{outline:3px solid #f0a500;outline-offset:2px}',
  'dt{font-weight:bold}dd{word-break:break-word}',
].join('');

/** One site's frame: its name (in every title), its header's HTML and its own style rules. */
export interface Site {
  readonly name: string;
  readonly header: string;
  readonly style: string;
}

/** A whole page: plain HTML, no scripts, no external resources. */
export function sitePage(site: Site, title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} – ${site.name}</title>
<style>${BASE_STYLE}${site.style}</style>
</head>
<body>
${site.header}
<main>
<h1>${escapeHtml(title)}</h1>
${body}
</main>
</body>
</html>
`;
}

/** The data to be signed in hex, in groups of four: the fingerprint the demo page and the IdP show. */
export function fingerprint(tbsData: string): string {
  return (
    Buffer.from(tbsData, 'base64')
      .toString('hex')
      .toUpperCase()
      .match(/.{1,4}/g)
      ?.join(' ') ?? ''
  );
}
