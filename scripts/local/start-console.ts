/**
 * What `npm start` prints and what it files. The console keeps what a person watches: the banner and the
 * runner's own lines, one access line per request, and warnings and errors (each as one short line). The
 * log file gets every line, the functions' JSON logs (Powertools, at LOG_LEVEL) among them, so the
 * console does not scroll the banner away with several JSON lines per request.
 */
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { dirname } from 'node:path';

/** Powertools' levels that reach the console too. */
const CONSOLE_LEVELS = new Set(['WARN', 'ERROR', 'CRITICAL', 'FATAL']);

/** Where one line goes: always the file; the console, the line itself or its short form, or not at all. */
export interface Routed {
  readonly console?: string;
}

/**
 * A line of the runner: `[process] ` (a child's prefix, as `[signer-0] `) and a JSON log object go to the
 * file only, but at WARN and above also as `[process] LEVEL service: message`; any other line is shown.
 */
export function routeLine(line: string): Routed {
  const { prefix, rest } = /^(?<prefix>\[[\w-]+\] )?(?<rest>.*)$/s.exec(line)!.groups as {
    prefix?: string;
    rest: string;
  };
  const entry = jsonObject(rest);
  if (!entry) return { console: line };
  const level = typeof entry.level === 'string' ? entry.level.toUpperCase() : undefined;
  if (!level || !CONSOLE_LEVELS.has(level)) return {};
  const service = typeof entry.service === 'string' ? `${entry.service}: ` : '';
  const message = typeof entry.message === 'string' ? entry.message : '(no message)';
  const error = entry.error as { name?: unknown } | undefined;
  const errorName = typeof error?.name === 'string' ? ` (${error.name})` : '';
  return { console: `${prefix ?? ''}${level} ${service}${message}${errorName}` };
}

function jsonObject(text: string): Record<string, unknown> | undefined {
  if (!text.startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

export interface StartConsole {
  /** The log file (written afresh at each start). */
  readonly file: string;
  /** A runner line, routed by routeLine. */
  log(line: string): void;
  /** A line for the console (and the file) as it is: the access lines. */
  show(line: string): void;
  /** A line for the file only: the schedules' run summaries. */
  fileOnly(line: string): void;
  /**
   * Routes this process's own stdout and stderr line by line as `log` (the handlers that run in this
   * process log through a Console of their own on process.stdout). Returns the undo.
   */
  captureProcessOutput(): () => void;
  close(): Promise<void>;
}

export function createStartConsole(file: string): StartConsole {
  mkdirSync(dirname(file), { recursive: true });
  const out: WriteStream = createWriteStream(file, { flags: 'w', mode: 0o600 });
  const writeStdout = process.stdout.write.bind(process.stdout);
  const toFile = (line: string): void => void out.write(`${line}\n`);
  const toConsole = (line: string): void => void writeStdout(`${line}\n`);
  const log = (line: string): void => {
    toFile(line);
    const routed = routeLine(line);
    if (routed.console !== undefined) toConsole(routed.console);
  };
  return {
    file,
    log,
    show: (line) => {
      toFile(line);
      toConsole(line);
    },
    fileOnly: toFile,
    captureProcessOutput: () => {
      const undo = [process.stdout, process.stderr].map((stream) => {
        const original = stream.write;
        let partial = '';
        stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]): boolean => {
          const lines = (partial + (typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString())).split(
            '\n',
          );
          partial = lines.pop()!;
          for (const line of lines) log(line);
          const callback = rest.find((r): r is () => void => typeof r === 'function');
          callback?.();
          return true;
        }) as typeof stream.write;
        return () => {
          stream.write = original;
          if (partial) log(partial);
        };
      });
      return () => undo.forEach((u) => u());
    },
    close: () => new Promise((resolve) => out.end(() => resolve())),
  };
}
