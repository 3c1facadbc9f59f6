/** The local IdP's few pages: plain HTML, no scripts, no external resources. */
import MarkdownIt from 'markdown-it';
import { escapeHtml, sitePage, type Site } from '../../shared/html';

const IDP: Site = {
  name: 'local IdP',
  header: '<header>Local identity provider (test citizens only)</header>',
  style: [
    'body{max-width:34em}',
    'header{border-bottom:1px solid #ccc;margin-bottom:1em;font-size:.9em;color:#444}',
    '.error{color:#a00}code{font-size:1.05em}',
    'label{display:block;margin:.5em 0 .25em}input{font-size:1.1em;padding:.3em}',
    'button{margin:.5em .5em .5em 0;border:1px solid #0b4f8a;background:#0b5fa5;color:#fff}',
    'button.secondary{background:#fff;color:#0b4f8a}',
    '.message{border:2px solid #0b5fa5;border-radius:6px;padding:0 1em;margin:1em 0;background:#f4f8fc}',
    '.actions{display:flex;flex-wrap:wrap;align-items:center}',
    'dd{margin:0 0 .5em 0}',
  ].join(''),
};

export function page(title: string, body: string): string {
  return sitePage(IDP, title, body);
}

/**
 * The Markdown dialect of sign messages: CommonMark (markdown-it's strict preset), so a backslash escape
 * shows the character it escapes, as the service's escaping of document names expects. No raw HTML, no
 * links or images (their source shows as text: a sign message links nowhere), line breaks kept.
 */
const markdown = new MarkdownIt('commonmark', { html: false, xhtmlOut: false, breaks: true }).disable([
  'link',
  'image',
  'autolink',
  'reference',
]);
// The page's own heading is h1: a message's headings start at h2.
const shiftHeading = (tag: string): string => `h${Math.min(Number(tag.slice(1)) + 1, 6)}`;
markdown.renderer.rules.heading_open = (tokens, i) => `<${shiftHeading(tokens[i].tag)}>`;
markdown.renderer.rules.heading_close = (tokens, i) => `</${shiftHeading(tokens[i].tag)}>\n`;
// A fence's info string would become a class attribute (the page's classes are styled): dropped.
markdown.renderer.rules.fence = (tokens, i) => `<pre><code>${escapeHtml(tokens[i].content)}</code></pre>\n`;

/**
 * A sign message as HTML: plain text escaped with its line breaks kept; Markdown as CommonMark without
 * raw HTML, links or images, as the Swedish profile leaves the dialect to the provider.
 */
export function renderSignMessage(text: string, mimeType: string): string {
  if (mimeType !== 'text/markdown') {
    return text
      .split(/\n{2,}/)
      .map((paragraph) => `<p>${escapeHtml(paragraph).replace(/\n/g, '<br>')}</p>`)
      .join('\n');
  }
  return markdown.render(text).trimEnd();
}
