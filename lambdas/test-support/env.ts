/**
 * For test files that configure handlers through process.env: puts the environment back as it was
 * before the file's tests once they are done, so no setting outlives the tests that made it.
 */
export function restoreEnvAfterAll(): void {
  const saved = { ...process.env };
  afterAll(() => {
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
  });
}
