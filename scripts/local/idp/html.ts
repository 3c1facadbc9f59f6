/** The local IdP's few pages: plain HTML, no scripts, no external resources. */
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

/** Inline Markdown of one line, on escaped text: `code`, **strong**, *emphasis* / _emphasis_; links as text. */
function inlineMarkdown(line: string): string {
  const parts = line.split(/(`[^`]+`)/);
  return parts
    .map((part) => {
      if (/^`[^`]+`$/.test(part)) return `<code>${escapeHtml(part.slice(1, -1))}</code>`;
      return (
        escapeHtml(part)
          // [text](target): the text, and the target spelled out (a sign message links nowhere).
          .replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, '$1 ($2)')
          .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
          .replace(/(^|[^\w*])\*([^*\s][^*]*)\*(?!\w)/g, '$1<em>$2</em>')
          .replace(/(^|[^\w])_([^_\s][^_]*)_(?!\w)/g, '$1<em>$2</em>')
      );
    })
    .join('');
}

/**
 * A sign message as HTML: plain text escaped with its line breaks kept; Markdown in a small, safe subset
 * (headings, paragraphs, lists, strong, emphasis, code; everything escaped first, no raw HTML, no links
 * or images), as the Swedish profile leaves the dialect to the provider.
 */
export function renderSignMessage(text: string, mimeType: string): string {
  if (mimeType !== 'text/markdown') {
    return text
      .split(/\n{2,}/)
      .map((paragraph) => `<p>${escapeHtml(paragraph).replace(/\n/g, '<br>')}</p>`)
      .join('\n');
  }
  const html: string[] = [];
  let list: { tag: 'ul' | 'ol'; items: string[] } | undefined;
  let paragraph: string[] = [];
  const flush = (): void => {
    if (paragraph.length > 0) html.push(`<p>${paragraph.map(inlineMarkdown).join('<br>')}</p>`);
    paragraph = [];
    if (list) html.push(`<${list.tag}>${list.items.map((i) => `<li>${i}</li>`).join('')}</${list.tag}>`);
    list = undefined;
  };
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\t/g, '    ');
    const heading = /^(#{1,3})\s+(.*)$/.exec(line);
    const bullet = /^\s*[-*+]\s+(.*)$/.exec(line);
    const numbered = /^\s*\d{1,3}[.)]\s+(.*)$/.exec(line);
    if (line.trim() === '') {
      flush();
    } else if (heading) {
      flush();
      // The page's own heading is h1: a message's headings start at h2.
      const level = heading[1].length + 1;
      html.push(`<h${level}>${inlineMarkdown(heading[2])}</h${level}>`);
    } else if (bullet || numbered) {
      const tag = bullet ? 'ul' : 'ol';
      if (paragraph.length > 0 || (list && list.tag !== tag)) flush();
      list ??= { tag, items: [] };
      list.items.push(inlineMarkdown((bullet ?? numbered)![1]));
    } else {
      if (list) flush();
      paragraph.push(line);
    }
  }
  flush();
  return html.join('\n');
}
