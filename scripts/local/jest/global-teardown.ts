import type { StandIns } from '../stand-ins';

export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __standIns?: StandIns }).__standIns?.stop();
}
