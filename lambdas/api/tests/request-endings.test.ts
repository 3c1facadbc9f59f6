import { RequestEndingSignals } from '../src';

test('a waiter wakes on the word for its request only; without word it ends false after its time', async () => {
  const endings = new RequestEndingSignals();
  const a = endings.wait('a', 5000, endings.mark());
  const b = endings.wait('b', 50, endings.mark());
  endings.announce('a');
  await expect(a).resolves.toBe(true);
  await expect(b).resolves.toBe(false);
});

test("a word said before the wait counts only if it came after the waiter's last read (its mark)", async () => {
  let now = 1000;
  const endings = new RequestEndingSignals({ clock: () => now });
  const before = endings.mark();
  endings.announce('a');
  await expect(endings.wait('a', 10, before)).resolves.toBe(true);
  // The last read came after the word (in the same millisecond) and still saw the request open: the word
  // does not count again.
  const after = endings.mark();
  await expect(endings.wait('a', 10, after)).resolves.toBe(false);
  // Forgotten after rememberMs (pruned on the next word).
  now += 40_000;
  endings.announce('z');
  await expect(endings.wait('a', 10, -1)).resolves.toBe(false);
  await expect(endings.wait('z', 10, -1)).resolves.toBe(true);
});
