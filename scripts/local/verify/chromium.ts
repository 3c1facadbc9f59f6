/**
 * Debian's Chromium, headless, through puppeteer-core: the real browser of the e2e tests. puppeteer-core
 * ships ES modules only, so it is loaded by Node's own require (which loads them), not Jest's.
 */
import { existsSync } from 'node:fs';
import type { Browser, PuppeteerNode } from 'puppeteer-core';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export async function launchChromium(
  options: { readonly defaultViewport?: { readonly width: number; readonly height: number } } = {},
): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: npm test installs it (scripts/bootstrap.sh --browser)`);
  }
  const nodeModule = (
    process as unknown as { getBuiltinModule(id: 'node:module'): typeof import('node:module') }
  ).getBuiltinModule('node:module');
  const puppeteer = nodeModule.createRequire(__filename)('puppeteer-core') as PuppeteerNode;
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Root in a container: no user namespaces for Chromium's sandbox.
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
    ...(options.defaultViewport ? { defaultViewport: options.defaultViewport } : {}),
  });
}
