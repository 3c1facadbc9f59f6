import type { IdpProcess } from '../idp/process';
import type { StandIns } from '../stand-ins';

export default async function globalTeardown(): Promise<void> {
  const started = globalThis as { __standIns?: StandIns; __idp?: IdpProcess };
  await Promise.all([started.__standIns?.stop(), started.__idp?.stop()]);
}
