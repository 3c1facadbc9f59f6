import { spawnSync } from 'node:child_process';
import { ROOT } from '../paths';

/** A verification tool (or its installer) failed: what it printed on stderr is part of the message. */
export class ToolError extends Error {
  constructor(
    message: string,
    readonly stderr: string,
    readonly exitCode: number | null,
  ) {
    super(stderr.trim() ? `${message}\n${stderr.trim()}` : message);
  }
}

/**
 * Runs a tool's install.sh synchronously (it returns at once when everything is in place). A failure
 * throws `ErrorClass` naming `what` and carrying the installer's messages.
 */
export function runInstaller(
  script: string,
  what: string,
  ErrorClass: new (message: string, stderr: string, exitCode: number | null) => ToolError,
): void {
  const run = spawnSync('bash', [script], {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 15 * 60_000,
  });
  if (run.error || run.status !== 0) {
    throw new ErrorClass(
      `${what} installation failed (${script})${run.error ? `: ${run.error.message}` : ''}`,
      run.stderr ?? '',
      run.status,
    );
  }
}
