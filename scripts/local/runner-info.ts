/**
 * Where a running `npm start` can be reached: written by the runner to .local/runner.json, read by the
 * demo and the operator scripts so they need no flags locally.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LOCAL_DIR } from './paths';

export interface RunnerInfo {
  readonly url: string;
  readonly pid: number;
  readonly env: Readonly<Record<string, string>>;
}

/** LOCAL_RUNNER_INFO_FILE moves it (a test running a node of its own must not replace the developer's). */
const file = (): string => process.env.LOCAL_RUNNER_INFO_FILE || join(LOCAL_DIR, 'runner.json');

export function writeRunnerInfo(info: RunnerInfo): void {
  writeFileSync(file(), `${JSON.stringify(info, null, 2)}\n`, { mode: 0o600 });
}

/** The running runner's info, or undefined when none is running. */
export function readRunnerInfo(): RunnerInfo | undefined {
  if (!existsSync(file())) return undefined;
  const info = JSON.parse(readFileSync(file(), 'utf8')) as RunnerInfo;
  try {
    process.kill(info.pid, 0);
    return info;
  } catch {
    return undefined;
  }
}

/** Applies the runner's endpoints and resource names to this process (values already set win). */
export function useRunnerEnv(): RunnerInfo | undefined {
  const info = readRunnerInfo();
  if (!info) return undefined;
  const keys = [
    'AWS_ENDPOINT_URL_DYNAMODB',
    'AWS_ENDPOINT_URL_SQS',
    'AWS_REGION',
    'AWS_ACCESS_KEY_ID',
    'AWS_SECRET_ACCESS_KEY',
    'AWS_ENDPOINT_URL_LAMBDA',
    'SIGN_QUEUE_URL',
    'SIGN_DLQ_URL',
    'PKI_PUBLISH_TARGET',
    'PKI_BASE_URL',
    'AUDIT_ANCHOR_TARGET',
  ];
  for (const key of keys) if (info.env[key] && !process.env[key]) process.env[key] = info.env[key];
  for (const [key, value] of Object.entries(info.env)) {
    if (key.endsWith('_TABLE_NAME') && !process.env[key]) process.env[key] = value;
  }
  return info;
}
