/** What `npm start` shows of a line and what it only files (start-console.ts). */
import { routeLine } from '../start-console';

const json = (entry: Record<string, unknown>): string => JSON.stringify(entry);

test('a JSON log line below WARN goes to the file only, with or without a process prefix', () => {
  expect(routeLine(json({ level: 'INFO', message: 'signed', service: 'signer' }))).toEqual({});
  expect(routeLine(`[signer-0] ${json({ level: 'DEBUG', message: 'x', service: 'signer' })}`)).toEqual({});
});

test('a JSON log line at WARN and above is also shown, as one short line', () => {
  expect(
    routeLine(
      `[signer-1] ${json({ level: 'ERROR', message: 'sign failed', service: 'signer', error: { name: 'HsmError', stack: 'at x' } })}`,
    ),
  ).toEqual({ console: '[signer-1] ERROR signer: sign failed (HsmError)' });
  expect(routeLine(json({ level: 'WARN', message: 'pool low', service: 'keygen' }))).toEqual({
    console: 'WARN keygen: pool low',
  });
});

test('any other line is shown as it is: the runner’s own, a child’s text, JSON that is no object', () => {
  for (const line of ['keygen failed: Error: x', '[signer-0] consumer ready', '[1,2]', '{not json'])
    expect(routeLine(line)).toEqual({ console: line });
});
