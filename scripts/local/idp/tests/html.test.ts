/**
 * The signature page's rendering of a sign message: everything the e-service sent is escaped first, so a
 * message can format text (CommonMark) but never add markup, links, images or scripts.
 */
import fc from 'fast-check';
import { renderSignMessage } from '../html';

test('plain text: escaped, paragraphs and line breaks kept, nothing interpreted', () => {
  expect(renderSignMessage('a <b>c</b> & "d"\nrad 2\n\nstycke **2**', 'text/plain')).toBe(
    '<p>a &lt;b&gt;c&lt;/b&gt; &amp; &quot;d&quot;<br>rad 2</p>\n<p>stycke **2**</p>',
  );
});

test('Markdown: headings below the page’s own, paragraphs, line breaks, lists, strong, emphasis and code', () => {
  const html = renderSignMessage(
    '# Avtal\n\nJag godkänner **avtalet**\noch _villkoren_ i `§ 3`.\n\n- punkt 1\n- punkt 2\n\n1. ett\n2. två',
    'text/markdown',
  );
  expect(html).toBe(
    [
      '<h2>Avtal</h2>',
      '<p>Jag godkänner <strong>avtalet</strong><br>',
      'och <em>villkoren</em> i <code>§ 3</code>.</p>',
      '<ul>\n<li>punkt 1</li>\n<li>punkt 2</li>\n</ul>',
      '<ol>\n<li>ett</li>\n<li>två</li>\n</ol>',
    ].join('\n'),
  );
});

test('Markdown is CommonMark: a backslash escape shows the character, an entity its character', () => {
  expect(renderSignMessage('\\<em>a\\</em> b\\_c\\_d \\*e\\* \\# f &amp; g\\\\', 'text/markdown')).toBe(
    '<p>&lt;em&gt;a&lt;/em&gt; b_c_d *e* # f &amp; g\\</p>',
  );
});

test('Markdown cannot add markup: raw HTML, links and images come out as text', () => {
  const html = renderSignMessage(
    '<script>alert(1)</script> [klicka](javascript:alert(1)) ![bild](http://x/y.png) <img src=x onerror=alert(1)>',
    'text/markdown',
  );
  expect(html).not.toMatch(/<(script|a|img)\b/i);
  expect(html).toContain('&lt;script&gt;');
  expect(html).toContain('[klicka](javascript:alert(1))');
});

test('a code fence’s info string adds no attribute, a reference definition stays visible', () => {
  expect(renderSignMessage('```js error\nx\n```\n\n[a]: http://x', 'text/markdown')).toBe(
    '<pre><code>x\n</code></pre>\n<p>[a]: http://x</p>',
  );
});

test('property: whatever the text, the only tags are those of the subset', () => {
  fc.assert(
    fc.property(
      fc.string({
        unit: fc.constantFrom(
          '<',
          '>',
          'a',
          '*',
          '_',
          '`',
          '#',
          '-',
          ' ',
          '\n',
          '"',
          '[',
          ']',
          '(',
          ')',
          '!',
          '1',
          '.',
          '\\',
          '&',
          '>',
          '~',
          '=',
        ),
      }),
      fc.constantFrom('text/plain', 'text/markdown'),
      (text, mimeType) => {
        const tags = [...renderSignMessage(text, mimeType).matchAll(/<\/?([a-z0-9]+)[^>]*>/g)].map(
          (m) => m[1],
        );
        for (const tag of tags)
          expect([
            'p',
            'br',
            'h2',
            'h3',
            'h4',
            'h5',
            'h6',
            'ul',
            'ol',
            'li',
            'strong',
            'em',
            'code',
            'pre',
            'blockquote',
            'hr',
          ]).toContain(tag);
        // The only attribute: an ordered list's start number.
        for (const [, attributes] of renderSignMessage(text, mimeType).matchAll(/<[a-z0-9]+( [^>]*)>/g))
          expect(attributes).toMatch(/^ start="\d+"$/);
      },
    ),
    { numRuns: 2000 },
  );
});
