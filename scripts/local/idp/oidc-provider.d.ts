/**
 * The part of oidc-provider's API the local IdP uses. The package ships no types and @types/oidc-provider
 * is not installed; these follow the v9 documentation (docs/README.md of panva/node-oidc-provider).
 */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface AccountClaims {
    readonly sub: string;
    readonly [claim: string]: unknown;
  }

  export interface Account {
    readonly accountId: string;
    /** use: 'id_token' or 'userinfo'; oidc-provider masks the result by scope and requested claims. */
    claims(use: string, scope?: string): AccountClaims | Promise<AccountClaims>;
  }

  export interface Feature {
    readonly enabled: boolean;
    readonly [option: string]: unknown;
  }

  export interface Configuration {
    /** Where sessions, grants and codes are kept: a factory of one storage object per model. */
    readonly adapter?: (model: string) => object;
    readonly clients?: readonly object[];
    readonly jwks?: { readonly keys: readonly object[] };
    /** token: the authorization code (or access token) the account is loaded for, when there is one. */
    readonly findAccount?: (
      ctx: unknown,
      sub: string,
      token?: { readonly grantId?: string },
    ) => Promise<Account | undefined>;
    readonly claims?: Readonly<Record<string, null | readonly string[]>>;
    readonly scopes?: readonly string[];
    /** Authorization request parameters beyond the standard ones, each with a validator (throws an OAuth error). */
    readonly extraParams?: Readonly<
      Record<
        string,
        (
          /** `trusted`: the parameters that came from a verified Request Object. */
          ctx: { oidc: { params: Record<string, unknown>; trusted?: readonly string[] } },
          value: unknown,
          client: { clientId: string },
        ) => Promise<void>
      >
    >;
    /** Endpoint paths (e.g. `authorization`: '/auth'). */
    readonly routes?: Readonly<Record<string, string>>;
    /** Extra discovery metadata. */
    readonly discovery?: Readonly<Record<string, unknown>>;
    readonly conformIdTokenClaims?: boolean;
    readonly acrValues?: readonly string[];
    readonly responseTypes?: readonly string[];
    readonly subjectTypes?: readonly string[];
    readonly features?: Readonly<Record<string, Feature>>;
    readonly pkce?: { readonly required: (ctx: unknown, client: unknown) => boolean };
    readonly interactions?: { readonly url: (ctx: unknown, interaction: { readonly uid: string }) => string };
    readonly cookies?: {
      readonly keys: readonly string[];
      readonly long?: Readonly<Record<string, unknown>>;
      readonly short?: Readonly<Record<string, unknown>>;
    };
    readonly ttl?: Readonly<Record<string, number>>;
    readonly enabledJWA?: Readonly<Record<string, readonly string[]>>;
    readonly clientBasedCORS?: (ctx: unknown, origin: string, client: unknown) => boolean;
    readonly issueRefreshToken?: () => boolean;
    readonly renderError?: (
      ctx: { type: string; body: unknown },
      out: Readonly<Record<string, unknown>>,
      error: Error,
    ) => void | Promise<void>;
  }

  export interface Prompt {
    readonly name: string;
    readonly reasons: readonly string[];
    readonly details: Readonly<Record<string, unknown>>;
  }

  export interface InteractionDetails {
    readonly uid: string;
    readonly prompt: Prompt;
    /** The authorization request's parameters (client_id, scope, claims, acr_values, ...). */
    readonly params: Readonly<Record<string, unknown>>;
    readonly session?: { readonly accountId?: string };
    readonly grantId?: string;
  }

  export interface InteractionResults {
    readonly login?: {
      readonly accountId: string;
      readonly acr?: string;
      readonly amr?: readonly string[];
      readonly remember?: boolean;
      readonly ts?: number;
    };
    readonly consent?: { readonly grantId?: string };
    readonly error?: string;
    readonly error_description?: string;
  }

  export class Grant {
    public constructor(properties: { readonly accountId: string; readonly clientId: string });
    public static find(id: string): Promise<Grant | undefined>;
    public readonly accountId?: string;
    public addOIDCScope(scope: string): void;
    public addOIDCClaims(claims: readonly string[]): void;
    /** Returns the grant id. */
    public save(): Promise<string>;
  }

  export class Provider {
    public constructor(issuer: string, configuration?: Configuration);
    public readonly issuer: string;
    public readonly Grant: typeof Grant;
    /** A Node.js request listener serving every endpoint of the provider. */
    public callback(): (req: IncomingMessage, res: ServerResponse) => void;
    public interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
    public interactionFinished(
      req: IncomingMessage,
      res: ServerResponse,
      result: InteractionResults,
      options?: { readonly mergeWithLastSubmission?: boolean },
    ): Promise<void>;
    public on(event: string, listener: (ctx: unknown, error: Error) => void): this;
  }

  export const errors: {
    readonly SessionNotFound: new (...args: never[]) => Error;
    readonly InvalidRequest: new (description: string) => Error;
    readonly UnauthorizedClient: new (description: string) => Error;
  };

  export default Provider;
}

/** The library's own in-memory storage (lib/adapters/memory_adapter.js; the package has no exports map). */
declare module 'oidc-provider/lib/adapters/memory_adapter.js' {
  export function createMemoryAdapter(clockTolerance?: number): (model: string) => object;
}
