/** Hardened parsing, and canonical XML compared with libxml2's (xmllint), an implementation nobody here wrote. */
import { execFileSync } from 'node:child_process';
import {
  C14N,
  XmlAlgorithmNotSupportedError,
  XmlMalformedError,
  c14nAlgorithm,
  canonicalize,
  parseXml,
} from '@pipeline/xml';

const DOCUMENT = `<?xml version="1.0" encoding="UTF-8"?>
<a:Root xmlns:a="urn:a" xmlns:b="urn:b" xmlns="urn:default"   z="2" a="1">
  <!-- a comment -->
  <Child b:attr="x &amp; &lt;y&gt;" xmlns:unused="urn:unused"><b:Leaf>text &#x41; &gt; </b:Leaf><Empty/></Child>
</a:Root>`;

function xmllint(flag: string): string {
  return execFileSync('xmllint', [flag, '-'], { input: DOCUMENT, encoding: 'utf8' });
}

describe('canonicalize', () => {
  it('writes what xmllint writes, inclusive and exclusive, with comments', () => {
    const root = parseXml(DOCUMENT).documentElement;
    expect(canonicalize(root, C14N.inclusiveWithComments)).toBe(xmllint('--c14n'));
    expect(canonicalize(root, C14N.exclusiveWithComments)).toBe(xmllint('--exc-c14n'));
  });

  it('drops comments without "WithComments", and exclusive C14N drops unused namespaces of a subtree', () => {
    const root = parseXml(DOCUMENT).documentElement;
    expect(canonicalize(root, C14N.inclusive)).not.toContain('a comment');
    const child = root.getElementsByTagNameNS('urn:default', 'Child')[0] as Element;
    const exclusive = canonicalize(child, C14N.exclusive);
    expect(exclusive.startsWith('<Child xmlns="urn:default" xmlns:b="urn:b" b:attr=')).toBe(true);
    expect(exclusive).not.toContain('urn:unused');
    // Inclusive C14N of the same subtree renders every namespace in scope, inherited ones included.
    expect(canonicalize(child, C14N.inclusive)).toContain('xmlns:a="urn:a"');
  });

  it('refuses C14N 1.1 and unknown methods', () => {
    expect(() => c14nAlgorithm('http://www.w3.org/2006/12/xml-c14n11')).toThrow(
      XmlAlgorithmNotSupportedError,
    );
    expect(c14nAlgorithm(C14N.exclusive)).toBe(C14N.exclusive);
  });
});

describe('parseXml', () => {
  it.each([
    ['a DOCTYPE', '<!DOCTYPE r [<!ENTITY e SYSTEM "file:///etc/passwd">]><r>&e;</r>', 'DOCTYPE'],
    ['mismatched tags', '<r><unclosed></r>', 'not well-formed'],
    ['a repeated attribute', '<r a="1" a="2"/>', 'not well-formed'],
    ['an undefined entity', '<r>&undefined;</r>', 'not well-formed'],
    ['text after the root', '<r>x</r>trailing', 'outside its root'],
    ['another encoding', '<?xml version="1.0" encoding="ISO-8859-1"?><r/>', 'UTF-8'],
    ['no root element', '   ', 'not well-formed|no root'],
  ])('refuses %s', (_, xml, message) => {
    expect(() => parseXml(xml)).toThrow(XmlMalformedError);
    expect(() => parseXml(xml)).toThrow(new RegExp(message));
  });

  it('refuses invalid UTF-8 octets and input over the cap', () => {
    expect(() => parseXml(Buffer.from([0x3c, 0x72, 0xff, 0x2f, 0x3e]))).toThrow('not valid UTF-8');
    expect(() => parseXml(`<r>${'x'.repeat(100)}</r>`, { maxBytes: 50 })).toThrow('exceeds 50 bytes');
  });

  it('keeps the parser message out of the error message', () => {
    try {
      parseXml('<r><secret-name-19121212-1212></r>');
      throw new Error('parsed');
    } catch (err) {
      expect((err as Error).message).toBe('the XML is not well-formed');
    }
  });
});
