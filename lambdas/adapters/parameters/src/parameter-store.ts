/**
 * SSM String parameters through Powertools Parameters: its cache (a value read is reused for
 * `maxAgeSeconds`, Powertools' default 5 s or POWERTOOLS_PARAMETERS_MAX_AGE) and its batching of
 * GetParameters. Certificates and key sets are public, so nothing here is a SecureString.
 */
import { SSMProvider } from '@aws-lambda-powertools/parameters/ssm';
import { ParameterNotFound } from '@aws-sdk/client-ssm';
import type { AwsConfig } from '@pipeline/config';
import { ssmClient } from '@pipeline/adapters/aws';

export interface ParameterStoreOptions {
  /** Seconds a read value is reused; 0 reads the store every time. Powertools' default otherwise. */
  readonly maxAgeSeconds?: number;
}

export class SsmParameterStore {
  public constructor(
    private readonly provider: SSMProvider,
    private readonly options: ParameterStoreOptions = {},
  ) {}

  public static create(aws: AwsConfig, options: ParameterStoreOptions = {}): SsmParameterStore {
    return new SsmParameterStore(new SSMProvider({ awsSdkV3Client: ssmClient(aws) }), options);
  }

  /** The value, or undefined when there is no such parameter. */
  public async get(name: string): Promise<string | undefined> {
    try {
      return (await this.provider.get(name, this.maxAge())) ?? undefined;
    } catch (err) {
      if ((err as Error).cause instanceof ParameterNotFound) return undefined;
      throw err;
    }
  }

  /** The values of those of `names` that exist (one GetParameters call per ten names). */
  public async getMany(names: readonly string[]): Promise<Map<string, string>> {
    // getParametersByName takes a max age of 0 for its default (5 s) and caches anyway: a store that
    // keeps nothing drops what that call kept.
    if (this.options.maxAgeSeconds === 0) this.provider.clearCache();
    const out: Record<string, unknown> = await this.provider.getParametersByName(
      Object.fromEntries(names.map((name) => [name, {}])),
      { ...this.maxAge(), throwOnError: false },
    );
    const found = new Map<string, string>();
    for (const name of names) {
      const value = out[name];
      if (typeof value === 'string') found.set(name, value);
    }
    return found;
  }

  /** Writes (overwrites) a String parameter; a read after it sees the new value. */
  public async put(name: string, value: string, tier: 'Standard' | 'Advanced' = 'Standard'): Promise<void> {
    await this.provider.set(name, { value, overwrite: true, parameterType: 'String', tier });
    this.provider.clearCache();
  }

  private maxAge(): { maxAge?: number } {
    return this.options.maxAgeSeconds === undefined ? {} : { maxAge: this.options.maxAgeSeconds };
  }
}
