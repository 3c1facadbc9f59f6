/**
 * `setUp` run once per execution environment, on first use; a set-up that failed is tried again by the
 * next caller instead of failing every later invocation. `forget()` makes the next call set up anew.
 */
export interface Once<T> {
  (): Promise<T>;
  forget(): void;
}

export function onceUntilFailure<T>(setUp: () => Promise<T>): Once<T> {
  let ready: Promise<T> | undefined;
  const once = (): Promise<T> => {
    ready ??= setUp().catch((err: unknown) => {
      ready = undefined;
      throw err;
    });
    return ready;
  };
  return Object.assign(once, { forget: () => (ready = undefined) });
}
