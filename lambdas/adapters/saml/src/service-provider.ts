/**
 * The DSS-Ext door's SAML service provider (its SamlLogin port): the federation's identity providers, the
 * signed AuthnRequest form, the identity provider's Response read and its assertion verified, our metadata.
 */
import type { SamlAssertionFacts } from '@pipeline/core/identity';
import type { XmlSigner } from '@pipeline/xml';
import { verifySamlAssertion } from './assertion';
import type { IdentityProviderEntry } from './metadata';
import {
  authnRequestForm,
  readSamlResponse,
  spMetadataXml,
  type AuthnRequestInput,
  type LoginRefusal,
  type PostForm,
} from './sp-login';

export type SamlAnswer =
  | { readonly kind: 'assertion'; readonly assertionXml: string; readonly facts: SamlAssertionFacts }
  | { readonly kind: 'refused'; readonly reason: LoginRefusal };

export class SamlServiceProvider {
  public constructor(
    private readonly sp: {
      readonly entityId: string;
      readonly acsUrl: string;
      readonly signer: XmlSigner;
      readonly signingCertificateDer: Buffer;
    },
    private readonly identityProviders: () => Promise<ReadonlyMap<string, IdentityProviderEntry>>,
  ) {}

  public async identityProvider(entityId: string): Promise<IdentityProviderEntry | undefined> {
    return (await this.identityProviders()).get(entityId);
  }

  public async authnRequestForm(
    input: Omit<AuthnRequestInput, 'idp'> & { readonly idp: string },
  ): Promise<PostForm> {
    const idp = await this.identityProvider(input.idp);
    if (idp === undefined) throw new Error('the identity provider is not in the federation');
    return authnRequestForm({ ...input, idp }, this.sp);
  }

  /** The Response read (signed by the expected identity provider, for our ACS, answering our request). */
  public async readResponse(
    encoded: string,
    expected: { readonly issuer: string; readonly inResponseTo: string },
  ): Promise<SamlAnswer> {
    const identityProviders = await this.identityProviders();
    const answer = readSamlResponse(encoded, {
      identityProviders,
      expectedIssuer: expected.issuer,
      expectedInResponseTo: expected.inResponseTo,
      acsUrl: this.sp.acsUrl,
    });
    if (answer.kind === 'refused') return answer;
    return {
      kind: 'assertion',
      assertionXml: answer.assertionXml,
      facts: verifySamlAssertion(answer.assertionXml, identityProviders),
    };
  }

  public async assertionFacts(assertionXml: string): Promise<SamlAssertionFacts> {
    return verifySamlAssertion(assertionXml, await this.identityProviders());
  }

  public metadataXml(): string {
    return spMetadataXml(this.sp);
  }
}
