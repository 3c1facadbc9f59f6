/**
 * `setUp` run once per execution environment, on first use; a set-up that failed is tried again by the
 * next caller instead of failing every later invocation.
 */
export function onceUntilFailure<T>(setUp: () => Promise<T>): () => Promise<T> {
  let ready: Promise<T> | undefined;
  return () => {
    ready ??= setUp().catch((err: unknown) => {
      ready = undefined;
      throw err;
    });
    return ready;
  };
}
