/**
 * Provisioning of the pool wrapping key: trusted, with its unwrap and wrap templates, made by whoever the
 * HSM profile says can make it so. Run by the local bootstrap (scripts/local/setup-token.ts) and by
 * operators (scripts/wrapping-key.ts), never by a Lambda function, so it is not exported from index.ts
 * (its entry point is provisioning.ts).
 */
import * as pkcs11js from 'pkcs11js';
import type { HsmProfileName } from '@pipeline/config';
import { toHsmError } from './errors';
import { acquireModule, releaseModule } from './module';
import { generateKeyWithNestedTemplate } from './nested-template';
import { findSlot, openSession, scrub } from './pkcs11-hsm';
import { connecting, profileFor, type HsmProfile } from './profiles';
import { flatTemplate, wrappingKeyTemplate } from './templates';

export interface WrappingKeyOptions {
  readonly modulePath: string;
  readonly tokenLabel: string;
  readonly profile: HsmProfileName;
  /**
   * The crypto user's PIN (CloudHSM: "<user>:<password>"). On CloudHSM that user owns the new key; on
   * SoftHSM it finds, and destroys, wrapping keys with the label that are not trusted.
   */
  readonly pin: string;
  /** The security officer's PIN, for profiles whose security officer creates the key (SoftHSM). */
  readonly soPin?: string;
  /** Only look: create, destroy and change nothing (an operator's check as the pool user). */
  readonly inspectOnly?: boolean;
}

export interface WrappingKeyResult {
  /**
   * `none`: the key was there; `created`: a new key; `replaced`: keys with the label that were not trusted
   * are destroyed (pool keys wrapped under them no longer unwrap) and a trusted one stands in their place.
   */
  readonly change: 'none' | 'created' | 'replaced';
  /** A key with the label is there (after the change). */
  readonly present: boolean;
  /** CKA_TRUSTED on the key now: on CloudHSM false until an admin marks it. */
  readonly trusted: boolean;
}

/**
 * Makes sure the wrapping key with this label exists in the profile's final form. PKCS#11 logins belong to
 * the whole process, so run it while no other HSM connection of this process is logged in: on SoftHSM it
 * logs in as the user, then as the security officer.
 */
export async function provisionWrappingKey(
  options: WrappingKeyOptions,
  label: string,
): Promise<WrappingKeyResult> {
  const profile = profileFor(options.profile);
  return Promise.resolve(connecting(profile, () => provision(options, label, profile)));
}

function provision(options: WrappingKeyOptions, label: string, profile: HsmProfile): WrappingKeyResult {
  const pkcs11 = acquireModule(options.modulePath);
  let session: Buffer | undefined;
  try {
    session = openSession(pkcs11, findSlot(pkcs11, options.tokenLabel));
    login(pkcs11, session, pkcs11js.CKU_USER, options.pin);
    const keys = findAll(pkcs11, session, [
      { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
      { type: pkcs11js.CKA_TOKEN, value: true },
      { type: pkcs11js.CKA_LABEL, value: label },
    ]);
    const trusted = keys.filter((key) => isTrusted(pkcs11, session!, key));
    if (options.inspectOnly) {
      return { change: 'none', present: keys.length > 0, trusted: trusted.length > 0 };
    }
    const generate = (): void => {
      const template = wrappingKeyTemplate(label, profile);
      const flat = flatTemplate(template);
      if (flat) pkcs11.C_GenerateKey(session!, { mechanism: pkcs11js.CKM_AES_KEY_GEN }, flat);
      else generateKeyWithNestedTemplate(options.modulePath, session!, pkcs11js.CKM_AES_KEY_GEN, template);
    };

    if (!profile.trustedWrapping || profile.wrapKeyCreator === 'crypto-user') {
      // The owner never destroys a key here: on CloudHSM an admin decides about keys, and marks them trusted.
      if (keys.length > 0) return { change: 'none', present: true, trusted: trusted.length > 0 };
      generate();
      return { change: 'created', present: true, trusted: false };
    }

    // A key made before pool keys had to wrap under trust (private, untrusted, no templates) goes: pool
    // blobs wrapped under it could still be unwrapped extractable through it.
    if (trusted.length === 0 && !options.soPin) {
      throw new Error(`the wrapping key ${label} is made by the security officer: no SO PIN was given`);
    }
    const untrusted = keys.filter((key) => !trusted.includes(key));
    for (const key of untrusted) pkcs11.C_DestroyObject(session, key);
    const change = untrusted.length > 0 ? 'replaced' : 'created';
    if (trusted.length > 0) {
      return { change: untrusted.length > 0 ? 'replaced' : 'none', present: true, trusted: true };
    }
    pkcs11.C_Logout(session);
    login(pkcs11, session, pkcs11js.CKU_SO, options.soPin!);
    try {
      generate();
    } finally {
      pkcs11.C_Logout(session);
    }
    return { change, present: true, trusted: true };
  } catch (err) {
    const error = scrub(toHsmError(err, 'provision wrapping key'), options.pin);
    throw options.soPin ? scrub(error, options.soPin) : error;
  } finally {
    if (session) {
      try {
        pkcs11.C_CloseSession(session);
      } catch {
        // the module may be finalised already
      }
    }
    releaseModule(options.modulePath);
  }
}

function login(pkcs11: pkcs11js.PKCS11, session: Buffer, userType: number, pin: string): void {
  try {
    pkcs11.C_Login(session, userType, pin);
  } catch (err) {
    if ((err as { code?: number }).code !== pkcs11js.CKR_USER_ALREADY_LOGGED_IN) throw err;
  }
}

function findAll(pkcs11: pkcs11js.PKCS11, session: Buffer, template: pkcs11js.Template): Buffer[] {
  pkcs11.C_FindObjectsInit(session, template);
  try {
    return pkcs11.C_FindObjects(session, 100);
  } finally {
    pkcs11.C_FindObjectsFinal(session);
  }
}

function isTrusted(pkcs11: pkcs11js.PKCS11, session: Buffer, key: Buffer): boolean {
  const [trusted] = pkcs11.C_GetAttributeValue(session, key, [{ type: pkcs11js.CKA_TRUSTED }]);
  return (trusted.value as Buffer)[0] === 1;
}
