/**
 * The signature page's rendering of a sign message: everything the e-service sent is escaped first, so a
 * message can format text (a small Markdown subset) but never add markup, links, images or scripts.
 */
import fc from 'fast-check';
import { renderSignMessage } from '../html';

test('plain text: escaped, paragraphs and line breaks kept, nothing interpreted', () => {
  expect(renderSignMessage('a <b>c</b> & "d"\nrad 2\n\nstycke **2**', 'text/plain')).toBe(
    '<p>a &lt;b&gt;c&lt;/b&gt; &amp; &quot;d&quot;<br>rad 2</p>\n<p>stycke **2**</p>',
  );
});

test('Markdown: headings below the page’s own, paragraphs, lists, strong, emphasis and code', () => {
  const html = renderSignMessage(
    '# Avtal\n\nJag godkänner **avtalet** och _villkoren_ i `§ 3`.\n\n- punkt 1\n- punkt 2\n\n1. ett\n2. två',
    'text/markdown',
  );
  expect(html).toBe(
    [
      '<h2>Avtal</h2>',
      '<p>Jag godkänner <strong>avtalet</strong> och <em>villkoren</em> i <code>§ 3</code>.</p>',
      '<ul><li>punkt 1</li><li>punkt 2</li></ul>',
      '<ol><li>ett</li><li>två</li></ol>',
    ].join('\n'),
  );
});

test('Markdown cannot add markup: raw HTML, links and images come out as text', () => {
  const html = renderSignMessage(
    '<script>alert(1)</script> [klicka](javascript:alert(1)) ![bild](http://x/y.png) <img src=x onerror=alert(1)>',
    'text/markdown',
  );
  expect(html).not.toMatch(/<(script|a|img)\b/i);
  expect(html).toContain('&lt;script&gt;');
  expect(html).toContain('klicka (javascript:alert(1))');
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
        ),
      }),
      fc.constantFrom('text/plain', 'text/markdown'),
      (text, mimeType) => {
        const tags = [...renderSignMessage(text, mimeType).matchAll(/<\/?([a-z0-9]+)[^>]*>/g)].map(
          (m) => m[1],
        );
        for (const tag of tags)
          expect(['p', 'br', 'h2', 'h3', 'h4', 'ul', 'ol', 'li', 'strong', 'em', 'code']).toContain(tag);
        expect(renderSignMessage(text, mimeType)).not.toMatch(/<[a-z]+ [^>]*=/);
      },
    ),
    { numRuns: 2000 },
  );
});
