import * as pkcs11js from 'pkcs11js';
import { canonicalPublicKey } from '@pipeline/core/pki';
import {
  fits,
  HsmError,
  HsmKeyNotFoundError,
  HsmLoginError,
  HsmTokenNotFoundError,
  type KeyType,
} from '@pipeline/core/shared';
import { EC_PARAMS, digestInfo, ecdsaRawToDer, ecSpki, pssParams, rsaSpki } from './encoding';
import { isObjectHandleInvalid, isSessionLost, toHsmError } from './errors';
import { acquireModule, initialize, releaseModule } from './module';
import { connecting, profileFor, type HsmProfile } from './profiles';
import { SessionPool } from './session-pool';
import {
  flatTemplate,
  keyPairTemplates,
  keyTypeAttribute,
  unwrapTemplate,
  wrappingKeyTemplate,
} from './templates';
import type {
  GenerateOptions,
  GeneratedKeyPair,
  Hsm,
  HsmOptions,
  KeyAttributes,
  PrivateKeyRef,
  SignOptions,
} from './types';

const MAX_SIGNATURE_BYTES = 1024;

/**
 * The HSM over PKCS#11 (SoftHSM locally, CloudHSM in AWS): the only code that touches pkcs11js.
 * Connect once per process (outside the Lambda handler) and share the instance: it logs in once, keeps a
 * small pool of sessions, caches token-object handles, and uses the asynchronous pkcs11js calls for every
 * cryptographic operation so the event loop stays free.
 */
export class Pkcs11Hsm implements Hsm {
  private readonly profile: HsmProfile;
  /** Token object handles by label: never search on the hot path. Cleared after a reconnect. */
  private readonly tokenHandles = new Map<string, Buffer>();
  private closed = false;

  private constructor(
    private readonly pkcs11: pkcs11js.PKCS11,
    private readonly options: HsmOptions,
    private readonly slot: Buffer,
    private readonly pool: SessionPool,
  ) {
    this.profile = profileFor(options.profile);
  }

  public static async connect(options: HsmOptions): Promise<Pkcs11Hsm> {
    return connecting(profileFor(options.profile), () => {
      const pkcs11 = acquireModule(options.modulePath);
      try {
        const slot = findSlot(pkcs11, options.tokenLabel);
        const sessions: Buffer[] = [];
        for (let i = 0; i < options.sessionPoolSize; i++) sessions.push(openSession(pkcs11, slot));
        login(pkcs11, sessions[0], options.pin);
        return new Pkcs11Hsm(pkcs11, options, slot, new SessionPool(sessions));
      } catch (err) {
        releaseModule(options.modulePath);
        throw scrub(toHsmError(err, 'connect'), options.pin);
      }
    });
  }

  public async generateKeyPair(keyType: KeyType, options: GenerateOptions): Promise<GeneratedKeyPair> {
    const { mechanism, publicTemplate, privateTemplate } = keyPairTemplates(keyType, options, this.profile);
    return this.run('generate key pair', async (session) => {
      const keys = await this.pkcs11.C_GenerateKeyPairAsync(
        session,
        { mechanism },
        publicTemplate,
        privateTemplate,
      );
      const privateKey: PrivateKeyRef = {
        handle: keys.privateKey,
        keyType,
        token: options.tokenLabel !== undefined,
        label: options.tokenLabel,
      };
      try {
        const publicKeySpki = this.exportPublicKey(session, keys.publicKey);
        return { privateKey, publicKeySpki };
      } catch (err) {
        this.destroyQuietly(session, keys.privateKey);
        throw err;
      } finally {
        // Token key pairs keep their public half (the CA reads it); session public keys are not needed.
        if (options.tokenLabel === undefined) this.destroyQuietly(session, keys.publicKey);
      }
    });
  }

  public async wrapPrivateKey(key: PrivateKeyRef, wrapKeyLabel: string): Promise<Buffer> {
    return this.run('wrap', async (session) => {
      const wrappingKey = this.tokenHandle(session, wrapKeyLabel, pkcs11js.CKO_SECRET_KEY);
      const out = Buffer.alloc(this.profile.maxWrappedBytes);
      const wrapped = await this.pkcs11.C_WrapKeyAsync(
        session,
        { mechanism: this.profile.wrapMechanism },
        wrappingKey,
        await this.keyHandle(session, key),
        out,
      );
      return Buffer.from(wrapped);
    });
  }

  public async unwrapPrivateKey(
    wrapped: Buffer,
    keyType: KeyType,
    wrapKeyLabel: string,
  ): Promise<PrivateKeyRef> {
    const template = unwrapTemplate(keyType);
    return this.run('unwrap', async (session) => {
      const wrappingKey = this.tokenHandle(session, wrapKeyLabel, pkcs11js.CKO_SECRET_KEY);
      const handle = await this.pkcs11.C_UnwrapKeyAsync(
        session,
        { mechanism: this.profile.wrapMechanism },
        wrappingKey,
        wrapped,
        template,
      );
      return { handle, keyType, token: false };
    });
  }

  public async signDigest(key: PrivateKeyRef, digest: Buffer, options: SignOptions): Promise<Buffer> {
    const { digestAlgorithm, signatureAlgorithm } = options;
    if (!fits(key.keyType, signatureAlgorithm)) {
      throw new HsmError(`${signatureAlgorithm} does not fit a ${key.keyType} key`, 'sign');
    }
    let mechanism: pkcs11js.Mechanism;
    let input: Buffer;
    switch (signatureAlgorithm) {
      case 'RSASSA-PKCS1-v1_5':
        mechanism = { mechanism: pkcs11js.CKM_RSA_PKCS };
        input = digestInfo(digestAlgorithm, digest);
        break;
      case 'RSASSA-PSS':
        mechanism = { mechanism: pkcs11js.CKM_RSA_PKCS_PSS, parameter: pssParams(digestAlgorithm) };
        input = digest;
        break;
      case 'ECDSA':
        mechanism = { mechanism: pkcs11js.CKM_ECDSA };
        input = digest;
        break;
    }
    return this.run('sign', async (session) => {
      this.pkcs11.C_SignInit(session, mechanism, await this.keyHandle(session, key));
      const out = Buffer.alloc(MAX_SIGNATURE_BYTES);
      const signature = Buffer.from(await this.pkcs11.C_SignAsync(session, input, out));
      return signatureAlgorithm === 'ECDSA' ? ecdsaRawToDer(signature) : signature;
    });
  }

  public async destroy(key: PrivateKeyRef): Promise<void> {
    if (key.token) throw new HsmError('token keys are not destroyed through the request path', 'destroy');
    await this.run('destroy', (session) => this.pkcs11.C_DestroyObject(session, key.handle));
  }

  public async findPrivateKey(label: string, keyType: KeyType): Promise<PrivateKeyRef | undefined> {
    return this.run('find private key', (session) => {
      const handle = this.tryTokenHandle(session, label, pkcs11js.CKO_PRIVATE_KEY, keyTypeAttribute(keyType));
      return handle ? { handle, keyType, token: true, label } : undefined;
    });
  }

  public async findPublicKeySpki(label: string): Promise<Buffer | undefined> {
    return this.run('find public key', (session) => {
      const handle = findOne(this.pkcs11, session, [
        { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_PUBLIC_KEY },
        { type: pkcs11js.CKA_TOKEN, value: true },
        { type: pkcs11js.CKA_LABEL, value: label },
      ]);
      return handle ? this.exportPublicKey(session, handle) : undefined;
    });
  }

  /**
   * A trusted wrapping key, or one with templates, is not made in a pool user's session: the user cannot
   * set CKA_TRUSTED, and pkcs11js cannot pass nested templates. provisionWrappingKey (wrapping-key.ts)
   * makes it; here it must already exist.
   */
  public async ensureWrappingKey(label: string): Promise<boolean> {
    return this.run('ensure wrapping key', async (session) => {
      if (this.tryTokenHandle(session, label, pkcs11js.CKO_SECRET_KEY)) return false;
      const template = flatTemplate(wrappingKeyTemplate(label, this.profile));
      if (this.profile.trustedWrapping || !template) {
        throw new HsmKeyNotFoundError(
          `no wrapping key labelled ${label}: on the ${this.profile.name} profile it is provisioned apart (scripts/wrapping-key.ts)`,
          'ensure wrapping key',
        );
      }
      const handle = await this.pkcs11.C_GenerateKeyAsync(
        session,
        { mechanism: pkcs11js.CKM_AES_KEY_GEN },
        template,
      );
      this.tokenHandles.set(`${pkcs11js.CKO_SECRET_KEY}/${label}/any`, handle);
      return true;
    });
  }

  public async keyAttributes(key: PrivateKeyRef): Promise<KeyAttributes> {
    return this.run('read attributes', async (session) => {
      const attrs = this.pkcs11.C_GetAttributeValue(session, await this.keyHandle(session, key), [
        { type: pkcs11js.CKA_TOKEN },
        { type: pkcs11js.CKA_SENSITIVE },
        { type: pkcs11js.CKA_EXTRACTABLE },
        { type: pkcs11js.CKA_SIGN },
        { type: pkcs11js.CKA_LABEL },
      ]);
      const bool = (i: number): boolean => (attrs[i].value as Buffer)[0] === 1;
      const label = (attrs[4].value as Buffer).toString('utf8');
      return {
        token: bool(0),
        sensitive: bool(1),
        extractable: bool(2),
        sign: bool(3),
        ...(label ? { label } : {}),
      };
    });
  }

  public async countSessionObjects(): Promise<number> {
    return this.run('count session objects', (session) => {
      this.pkcs11.C_FindObjectsInit(session, [{ type: pkcs11js.CKA_TOKEN, value: false }]);
      try {
        return this.pkcs11.C_FindObjects(session, 10_000).length;
      } finally {
        this.pkcs11.C_FindObjectsFinal(session);
      }
    });
  }

  public async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      this.pkcs11.C_CloseAllSessions(this.slot);
    } catch {
      // the module may already be finalised by a shutdown hook
    }
    releaseModule(this.options.modulePath);
  }

  /**
   * Runs one operation on a pooled session. A lost session or login (CloudHSM reconnects, SoftHSM
   * restarts) is repaired by re-opening and logging in again, and a stale token-object handle by
   * re-finding it; either way the operation is retried exactly once.
   */
  private async run<T>(operation: string, fn: (session: Buffer) => Promise<T> | T): Promise<T> {
    if (this.closed) throw new HsmError(`${operation} after close`, operation);
    for (let attempt = 0; ; attempt++) {
      let session = await this.pool.acquire();
      try {
        return await fn(session);
      } catch (err) {
        const error = scrub(toHsmError(err, operation), this.options.pin);
        if (attempt > 0) throw error;
        if (isSessionLost(error.ckr)) {
          session = this.reopen(session);
          continue;
        }
        if (isObjectHandleInvalid(error.ckr) && this.tokenHandles.size > 0) {
          this.tokenHandles.clear();
          continue;
        }
        throw error;
      } finally {
        this.pool.release(session);
      }
    }
  }

  private reopen(lost: Buffer): Buffer {
    try {
      this.pkcs11.C_CloseSession(lost);
    } catch {
      // already gone
    }
    this.tokenHandles.clear();
    return connecting(this.profile, () => {
      try {
        return this.openLoggedIn();
      } catch (err) {
        if ((err as { code?: number }).code !== pkcs11js.CKR_CRYPTOKI_NOT_INITIALIZED) throw err;
        initialize(this.pkcs11);
        return this.openLoggedIn();
      }
    });
  }

  private openLoggedIn(): Buffer {
    const session = openSession(this.pkcs11, this.slot);
    login(this.pkcs11, session, this.options.pin);
    return session;
  }

  /** Session keys carry their handle; token keys are resolved through the (refreshable) label cache. */
  private async keyHandle(session: Buffer, key: PrivateKeyRef): Promise<Buffer> {
    if (!key.token || key.label === undefined) return key.handle;
    return this.tokenHandle(session, key.label, pkcs11js.CKO_PRIVATE_KEY);
  }

  private tokenHandle(session: Buffer, label: string, objectClass: number): Buffer {
    const handle = this.tryTokenHandle(session, label, objectClass);
    if (!handle) throw new HsmKeyNotFoundError(`no token key labelled ${label}`, 'find key');
    return handle;
  }

  private tryTokenHandle(
    session: Buffer,
    label: string,
    objectClass: number,
    keyType?: number,
  ): Buffer | undefined {
    const cacheKey = `${objectClass}/${label}/${keyType ?? 'any'}`;
    const cached = this.tokenHandles.get(cacheKey);
    if (cached) return cached;
    const template: pkcs11js.Template = [
      { type: pkcs11js.CKA_CLASS, value: objectClass },
      { type: pkcs11js.CKA_TOKEN, value: true },
      { type: pkcs11js.CKA_LABEL, value: label },
    ];
    if (keyType !== undefined) template.push({ type: pkcs11js.CKA_KEY_TYPE, value: keyType });
    const handle = findOne(this.pkcs11, session, template);
    if (handle) this.tokenHandles.set(cacheKey, handle);
    return handle;
  }

  /**
   * SPKI of a public key object, RSA or EC (the curve is read from CKA_EC_PARAMS), in the key's one
   * canonical encoding (the only one the pool and the CA accept).
   */
  private exportPublicKey(session: Buffer, handle: Buffer): Buffer {
    const key = canonicalPublicKey(this.publicKeyDer(session, handle));
    if (!key) throw new HsmError('the public key is of no key type the service offers', 'exportPublicKey');
    return key.spki;
  }

  private publicKeyDer(session: Buffer, handle: Buffer): Buffer {
    const [keyType] = this.pkcs11.C_GetAttributeValue(session, handle, [{ type: pkcs11js.CKA_KEY_TYPE }]);
    if (ulong(keyType.value as Buffer) === pkcs11js.CKK_RSA) {
      const [modulus, exponent] = this.pkcs11.C_GetAttributeValue(session, handle, [
        { type: pkcs11js.CKA_MODULUS },
        { type: pkcs11js.CKA_PUBLIC_EXPONENT },
      ]);
      return rsaSpki(modulus.value as Buffer, exponent.value as Buffer);
    }
    const [params, point] = this.pkcs11.C_GetAttributeValue(session, handle, [
      { type: pkcs11js.CKA_EC_PARAMS },
      { type: pkcs11js.CKA_EC_POINT },
    ]);
    return ecSpki(ecKeyType(params.value as Buffer), point.value as Buffer);
  }

  private destroyQuietly(session: Buffer, handle: Buffer): void {
    try {
      this.pkcs11.C_DestroyObject(session, handle);
    } catch {
      // best effort on an error path; the original error is what the caller needs
    }
  }
}

function ulong(value: Buffer): number {
  return value.readUIntLE(0, Math.min(value.length, 6));
}

function ecKeyType(params: Buffer): KeyType {
  if (params.equals(EC_PARAMS['P-256'])) return 'EC-P256';
  if (params.equals(EC_PARAMS['P-384'])) return 'EC-P384';
  throw new HsmError('unsupported EC curve on a public key', 'export public key');
}

export function findSlot(pkcs11: pkcs11js.PKCS11, label: string): Buffer {
  for (const slot of pkcs11.C_GetSlotList(true)) {
    if (pkcs11.C_GetTokenInfo(slot).label.trim() === label) return slot;
  }
  throw new HsmTokenNotFoundError(`no token labelled ${label} is present`, 'find slot');
}

export function openSession(pkcs11: pkcs11js.PKCS11, slot: Buffer): Buffer {
  return pkcs11.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION | pkcs11js.CKF_RW_SESSION);
}

/** Login state is per application and token, so one login covers every session; a second is harmless. */
function login(pkcs11: pkcs11js.PKCS11, session: Buffer, pin: string): void {
  try {
    pkcs11.C_Login(session, pkcs11js.CKU_USER, pin);
  } catch (err) {
    if ((err as { code?: number }).code === pkcs11js.CKR_USER_ALREADY_LOGGED_IN) return;
    const error = toHsmError(err, 'login');
    throw error instanceof HsmLoginError
      ? error
      : new HsmLoginError(error.message, 'login', error.ckr, error.code);
  }
}

function findOne(pkcs11: pkcs11js.PKCS11, session: Buffer, template: pkcs11js.Template): Buffer | undefined {
  pkcs11.C_FindObjectsInit(session, template);
  try {
    return pkcs11.C_FindObjects(session) ?? undefined;
  } finally {
    pkcs11.C_FindObjectsFinal(session);
  }
}

/** Belt and braces: no error leaves the adapter with the PIN (or its password half) in its message. */
export function scrub(error: HsmError, pin: string): HsmError {
  const secrets = [pin, pin.includes(':') ? pin.slice(pin.indexOf(':') + 1) : ''].filter(
    (s) => s.length >= 3,
  );
  for (const secret of secrets) {
    if (error.message.includes(secret)) error.message = error.message.split(secret).join('***');
  }
  return error;
}
