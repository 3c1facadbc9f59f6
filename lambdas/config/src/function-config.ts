/**
 * Each function's configuration as one value: what its `wireX(config)` takes. A Lambda entry point
 * parses process.env once with the function's loader; the local runner parses its own environment
 * record, so neither writes nor reads a global to configure a function.
 */
import { loadAuditConfig, type AuditConfig } from './audit-config';
import { loadCaConfig, type CaConfig } from './ca-config';
import { loadConfig } from './config';
import { cscSecretSources, loadCscConfig, type CscConfig, type CscSecretSources } from './csc-config';
import { dssExtSecretSources, type DssExtConfig, type DssExtSecretSources } from './dssext-config';
import { ConfigError } from './errors';
import { loadIdentityConfig, type IdentityConfig } from './identity-config';
import { loadKeygenPolicyConfig, type KeygenPolicyConfig } from './keygen-config';
import { loadPipelineConfig, type PipelineConfig } from './pipeline-config';
import { loadPlanningConfig, type PlanningConfig } from './planning-config';
import type { AppConfig, Env } from './types';

/** The functions on the queue and the pool (reconcile; the others below add theirs). */
export interface QueueFunctionConfig {
  readonly app: AppConfig;
  readonly pipeline: PipelineConfig;
}

export interface ApiFunctionConfig extends QueueFunctionConfig {
  readonly identity: IdentityConfig;
}

export interface SignerFunctionConfig extends QueueFunctionConfig {
  readonly ca: CaConfig;
  readonly audit: AuditConfig;
}

export interface KeygenFunctionConfig extends QueueFunctionConfig {
  readonly audit: AuditConfig;
  readonly planning: PlanningConfig;
  readonly keygenPolicy: KeygenPolicyConfig;
}

/** The CA-side functions (CRL, OCSP, TSA, revocation): the HSM as the CA's crypto user. */
export interface CaSideFunctionConfig {
  readonly app: AppConfig;
  readonly ca: CaConfig;
  readonly audit: AuditConfig;
}

export interface CaFunctionConfig extends CaSideFunctionConfig {
  readonly identity: IdentityConfig;
}

export interface AuditCheckpointFunctionConfig {
  readonly app: AppConfig;
  readonly audit: AuditConfig;
}

export interface JwksRefreshFunctionConfig {
  readonly app: AppConfig;
  readonly identity: IdentityConfig;
}

/**
 * The CSC function: the API's intake settings, and its own, which need the registered clients when
 * CSC_CLIENTS names a secret: `csc(clientsText)` parses them once the wiring has read it.
 */
export interface CscFunctionConfig extends ApiFunctionConfig {
  readonly secrets: CscSecretSources;
  readonly csc: (clientsText: string | undefined) => CscConfig;
}

/** The DSS-Ext door's function: the API's intake settings, its registrations and federation, its key. */
export interface DssExtFunctionConfig extends ApiFunctionConfig {
  readonly dssExt: DssExtConfig;
  readonly secrets: DssExtSecretSources;
}

export function loadQueueFunctionConfig(env: Env): QueueFunctionConfig {
  return { app: loadConfig(env), pipeline: loadPipelineConfig(env) };
}

export function loadApiFunctionConfig(env: Env): ApiFunctionConfig {
  return { ...loadQueueFunctionConfig(env), identity: loadIdentityConfig(env) };
}

export function loadSignerFunctionConfig(env: Env): SignerFunctionConfig {
  return { ...loadQueueFunctionConfig(env), ca: loadCaConfig(env), audit: loadAuditConfig(env) };
}

export function loadKeygenFunctionConfig(env: Env): KeygenFunctionConfig {
  return {
    ...loadQueueFunctionConfig(env),
    audit: loadAuditConfig(env),
    planning: loadPlanningConfig(env),
    keygenPolicy: loadKeygenPolicyConfig(env),
  };
}

export function loadCaSideFunctionConfig(env: Env): CaSideFunctionConfig {
  return { app: loadConfig(env), ca: loadCaConfig(env), audit: loadAuditConfig(env) };
}

export function loadCaFunctionConfig(env: Env): CaFunctionConfig {
  return { ...loadCaSideFunctionConfig(env), identity: loadIdentityConfig(env) };
}

export function loadAuditCheckpointFunctionConfig(env: Env): AuditCheckpointFunctionConfig {
  return { app: loadConfig(env), audit: loadAuditConfig(env) };
}

export function loadJwksRefreshFunctionConfig(env: Env): JwksRefreshFunctionConfig {
  return { app: loadConfig(env), identity: loadIdentityConfig(env) };
}

export function loadCscFunctionConfig(env: Env): CscFunctionConfig {
  const api = loadApiFunctionConfig(env);
  const defaultIssuer = api.identity.issuers[0]?.issuer;
  return {
    ...api,
    secrets: cscSecretSources(env),
    csc: (clientsText) => loadCscConfig(env, defaultIssuer, clientsText),
  };
}

export function loadDssExtFunctionConfig(env: Env): DssExtFunctionConfig {
  const api = loadApiFunctionConfig(env);
  const { dssExt } = api.identity;
  if (dssExt === undefined) throw new ConfigError('DSSEXT_BASE_URL is required', 'DSSEXT_BASE_URL');
  return { ...api, dssExt, secrets: dssExtSecretSources(env) };
}
