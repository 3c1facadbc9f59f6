/**
 * What the citizen sees is what was named: document names composed into a text/markdown sign message by
 * the service (composeSignMessage) and rendered by the local provider's renderer show, in a real browser
 * (Debian's Chromium through puppeteer-core), exactly as the e-service sent them, whatever Markdown,
 * HTML or escapes they hold.
 */
import fc from 'fast-check';
import type { Browser } from 'puppeteer-core';
import { launchChromium } from '../../verify/chromium';
import { composeSignMessage, DOCUMENT_NAME_PATTERN, type SignMessage } from '@pipeline/core/identity';
import { page, renderSignMessage } from '../html';

jest.setTimeout(120_000);

const MESSAGE: SignMessage = { text: 'Jag ansöker om **bygglov**.', mimeType: 'text/markdown' };

const HOSTILE_NAMES = [
  '<em>important</em> contract_2024.pdf',
  '<script>alert(1)</script>.pdf',
  '<img src=x onerror=alert(1)>',
  '<http://evil.example/>',
  '__bold__ and _emphasis_ and *star* and **strong**.pdf',
  '`code` and ``two`` backticks.txt',
  '[click here](http://evil.example/) ![image](http://evil.example/x.png)',
  '[ref]: http://evil.example/',
  'back\\slash\\*not star\\',
  '\\',
  '# not a heading.pdf',
  '### three',
  '2024. annual report.pdf',
  '2024) annual report.pdf',
  '- not a bullet',
  '+ plus',
  '> not a quote',
  '---',
  '===',
  '***',
  '~~~',
  '```',
  '| a | b |',
  'a &amp; b &lt;c&gt; &#65; &copy;',
  'trailing backslash hard break\\',
  'C:\\Users\\x\\*.pdf',
  '{curly} $dollar$ %percent ^caret @at "quotes" \'single\' ,;:?=/',
  'emoji 😀 and ÅÄÖ åäö',
];

let browser: Browser;

beforeAll(async () => {
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
});

/** The provider's page with the composed message; each listed document's text as the browser has it. */
async function shownNames(
  names: readonly string[],
): Promise<{ text: string[]; visible: string[]; elements: number[] }> {
  const composed = composeSignMessage(
    MESSAGE,
    names.map((name, i) => ({ name, digestAlgorithm: 'SHA-256', digest: `${i}`.padStart(44, 'A') })),
  );
  const tab = await browser.newPage();
  try {
    await tab.setJavaScriptEnabled(false);
    await tab.setContent(
      page('Sign', `<div id="sign-message">${renderSignMessage(composed.text, composed.mimeType)}</div>`),
    );
    return await tab.$$eval('#sign-message > ol > li', (items) => ({
      text: items.map((li) => li.textContent ?? ''),
      visible: items.map((li) => (li as unknown as { innerText: string }).innerText),
      elements: items.map((li) => li.children.length),
    }));
  } finally {
    await tab.close();
  }
}

test('hostile names show exactly as sent: no element, no link, no escape left visible', async () => {
  const shown = await shownNames(HOSTILE_NAMES);
  expect(shown.text).toEqual(HOSTILE_NAMES);
  // Text only: no element (emphasis, code, link) inside any item.
  expect(shown.elements).toEqual(HOSTILE_NAMES.map(() => 0));
  // What is painted too (innerText): none of these names has white space a browser collapses.
  expect(shown.visible).toEqual(HOSTILE_NAMES);
});

test('white space is kept in the text: at either end (not stripped, no code block) and in runs', async () => {
  const names = [
    ' one leading space',
    '     five leading spaces',
    'trailing  ',
    '\u00a0nbsp\u3000',
    'two  spaces',
  ];
  const shown = await shownNames(names);
  expect(shown.text).toEqual(names);
});

test('property: any name the API accepts, of Markdown-heavy characters, is its own text on the page', async () => {
  const accepted = new RegExp(DOCUMENT_NAME_PATTERN, 'u');
  const unit = fc.constantFrom(
    ...'!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~ \u00a0aZ09'.split(''),
    '&amp;',
    '&#x41;',
    '\\\\',
    '    ',
    '1.',
    '<em>',
  );
  const names = fc
    .sample(fc.string({ unit, minLength: 1, maxLength: 24 }), { numRuns: 400, seed: 46 })
    .filter((name) => accepted.test(name));
  expect(names.length).toBeGreaterThan(300);
  // In messages of 50 names: one would outgrow the composed message's 8000 characters.
  for (let i = 0; i < names.length; i += 50) {
    const some = names.slice(i, i + 50);
    expect((await shownNames(some)).text).toEqual(some);
  }
});
