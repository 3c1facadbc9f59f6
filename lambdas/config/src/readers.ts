/**
 * Readers of single settings: each takes the environment and a variable's name, and returns its value,
 * its default, or a ConfigError naming the variable. Every loader of this package builds on them.
 */
import { isAbsolute, resolve } from 'node:path';
import { ConfigError } from './errors';
import type { Env, ObjectTarget, PinSource, SecretSource } from './types';

/** `env:VAR`, `file:/path` or `secretsmanager:<secret id or ARN>`. */
export function parsePinSource(spec: string): PinSource {
  const colon = spec.indexOf(':');
  const kind = colon < 0 ? '' : spec.slice(0, colon);
  const rest = spec.slice(colon + 1);
  if (rest.length > 0) {
    if (kind === 'env') return { kind, variable: rest };
    if (kind === 'file') return { kind, path: rest };
    if (kind === 'secretsmanager') return { kind, secretId: rest };
  }
  throw new ConfigError(
    'HSM_PIN_SOURCE must be env:<VARIABLE>, file:<path> or secretsmanager:<secret id>',
    'HSM_PIN_SOURCE',
  );
}

/** `file:<dir>` (relative to the working directory) or `s3:<bucket>`; `variable` names the setting. */
export function objectTarget(spec: string, variable: string): ObjectTarget {
  const [kind, ...rest] = spec.split(':');
  const value = rest.join(':');
  if (kind === 'file' && value) return { kind, dir: isAbsolute(value) ? value : resolve(value) };
  if (kind === 's3' && /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(value)) return { kind, bucket: value };
  throw new ConfigError(`${variable} must be file:<dir> or s3:<bucket>`, variable);
}

export function str(env: Env, name: string, fallback?: string): string {
  const value = env[name];
  if (value !== undefined && value !== '') return value;
  if (fallback !== undefined) return fallback;
  throw new ConfigError(`${name} is required`, name);
}

/**
 * An integer setting's default and bounds: one definition for the function that reads it and for the CDK
 * app that checks the deployment setting it comes from (cdk/lib/settings.ts).
 */
export interface IntegerRule {
  readonly fallback: number;
  readonly min: number;
  readonly max: number;
}

/** `int` by a rule. */
export function integer(env: Env, name: string, rule: IntegerRule): number {
  return int(env, name, rule.fallback, rule.min, rule.max);
}

export function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}`, name);
  }
  return value;
}

export function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if ((allowed as readonly string[]).includes(raw)) return raw as T;
  throw new ConfigError(`${name} must be one of ${allowed.join(', ')}`, name);
}

/** The JSON array in `name`; none when unset. */
export function jsonArray(env: Env, name: string): unknown[] {
  const raw = env[name];
  if (!raw) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError(`${name} must be a JSON array`, name);
  }
  if (!Array.isArray(parsed)) throw new ConfigError(`${name} must be a JSON array`, name);
  return parsed;
}

/** `file:<path>` or `secretsmanager:<secret id or ARN>` (what the secret holds is named in the error). */
export function secretSource(env: Env, name: string, holds: string): SecretSource {
  const spec = str(env, name);
  const colon = spec.indexOf(':');
  const rest = spec.slice(colon + 1);
  if (colon > 0 && rest.length > 0) {
    const kind = spec.slice(0, colon);
    if (kind === 'file') return { kind, path: rest };
    if (kind === 'secretsmanager') return { kind, secretId: rest };
  }
  throw new ConfigError(`${name} must be file:<path> or secretsmanager:<secret id> of ${holds}`, name);
}
