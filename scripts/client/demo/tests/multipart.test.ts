/** The demo page's upload parsing: fields and one file, bounded, malformed bodies refused. */
import { FormError, parseMultipart } from '../multipart';

const TYPE = 'multipart/form-data; boundary=----x42';

function body(parts: string[]): Buffer {
  return Buffer.from(`${parts.map((p) => `------x42\r\n${p}\r\n`).join('')}------x42--\r\n`, 'latin1');
}

test('fields and a file, with the file name and its bytes as sent (binary kept)', () => {
  const pdf = '%PDF-1.7\r\n\u00e5\u0000\r\n--not-a-boundary\r\n%%EOF';
  const parts = parseMultipart(
    TYPE,
    body([
      'Content-Disposition: form-data; name="document"; filename="avtal.pdf"\r\nContent-Type: application/pdf\r\n\r\n' +
        pdf,
      'Content-Disposition: form-data; name="message"\r\n\r\nJag godk\u00c3\u00a4nner',
    ]),
  );
  expect(parts.map((p) => [p.name, p.filename, p.contentType])).toEqual([
    ['document', 'avtal.pdf', 'application/pdf'],
    ['message', undefined, undefined],
  ]);
  expect(parts[0].data.equals(Buffer.from(pdf, 'latin1'))).toBe(true);
  expect(parts[1].data.toString('utf8')).toBe('Jag godkänner');
});

test.each<[string, string | undefined, Buffer]>([
  ['not multipart', 'application/json', Buffer.from('{}')],
  ['no boundary', 'multipart/form-data', Buffer.from('')],
  ['no delimiter', TYPE, Buffer.from('hello')],
  ['a part without a name', TYPE, body(['Content-Disposition: form-data\r\n\r\nx'])],
  [
    'a part that never ends',
    TYPE,
    Buffer.from('------x42\r\nContent-Disposition: form-data; name="a"\r\n\r\nx'),
  ],
])('%s is refused', (_name, type, data) => {
  expect(() => parseMultipart(type, data)).toThrow(FormError);
});
