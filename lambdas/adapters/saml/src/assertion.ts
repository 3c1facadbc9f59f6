/**
 * A SAML assertion's signature and what it states. The assertion must be signed itself (our SP metadata
 * says WantAssertionsSigned): the CA checks the evidence without the Response around it, which only the
 * door sees. The signature must cover the assertion element by its ID and verify with a signing
 * certificate of the identity provider in the federation metadata; the facts are read from the signed
 * octets only.
 */
import { childrenNS, NS, parseXml, verifyXml, XmlMalformedError } from '@pipeline/xml';
import { AssertionError, type SamlAssertionFacts } from '@pipeline/core/identity';
import type { IdentityProviderEntry } from './metadata';
import { BEARER, SAML_NS } from './namespaces';

const { saml } = SAML_NS;

/** Verifies an assertion (XML octets) with its issuer's certificates and returns what it states. */
export function verifySamlAssertion(
  assertionXml: string,
  identityProviders: ReadonlyMap<string, IdentityProviderEntry>,
): SamlAssertionFacts {
  let root: Element;
  try {
    root = parseXml(assertionXml).documentElement;
  } catch (err) {
    if (err instanceof XmlMalformedError)
      throw new AssertionError('ASSERTION_MALFORMED', 'the assertion is not well-formed XML');
    throw err;
  }
  if (root.namespaceURI !== saml || root.localName !== 'Assertion') {
    throw new AssertionError('ASSERTION_MALFORMED', 'the evidence is not a SAML assertion');
  }
  const issuer = textOf(childrenNS(root, saml, 'Issuer')[0]);
  const idp = identityProviders.get(issuer);
  if (idp === undefined)
    throw new AssertionError('ASSERTION_ISSUER_UNTRUSTED', 'the identity provider is not in the federation');
  let signed: Element;
  try {
    const verified = verifyXml(assertionXml, {
      trusted: idp.signingCertificates,
      referenceId: root.getAttribute('ID') ?? '',
      signature: (d) => childrenNS(d.documentElement, NS.ds, 'Signature')[0],
    });
    signed = parseXml(verified.signedXml).documentElement;
  } catch {
    throw new AssertionError('ASSERTION_SIGNATURE_INVALID', "the assertion's signature does not verify");
  }
  return factsOf(signed);
}

function factsOf(assertion: Element): SamlAssertionFacts {
  const subject = one(assertion, 'Subject');
  const confirmation = childrenNS(subject, saml, 'SubjectConfirmation').find(
    (c) => c.getAttribute('Method') === BEARER,
  );
  const data =
    confirmation === undefined ? undefined : childrenNS(confirmation, saml, 'SubjectConfirmationData')[0];
  const conditions = childrenNS(assertion, saml, 'Conditions')[0];
  const authn = one(assertion, 'AuthnStatement');
  const context = one(authn, 'AuthnContext');
  const attributes = childrenNS(assertion, saml, 'AttributeStatement')
    .flatMap((s) => childrenNS(s, saml, 'Attribute'))
    .map((a) => ({
      name: a.getAttribute('Name') ?? '',
      values: childrenNS(a, saml, 'AttributeValue').map((v) => textOf(v)),
    }));
  const inResponseTo = data?.getAttribute('InResponseTo') || undefined;
  const recipient = data?.getAttribute('Recipient') || undefined;
  const confirmationNotOnOrAfter = optionalTime(data, 'NotOnOrAfter');
  const notBefore = optionalTime(conditions, 'NotBefore');
  const notOnOrAfter = optionalTime(conditions, 'NotOnOrAfter');
  return {
    id: assertion.getAttribute('ID') ?? '',
    issuer: textOf(one(assertion, 'Issuer')),
    issueInstant: time(assertion.getAttribute('IssueInstant')),
    ...(inResponseTo === undefined ? {} : { inResponseTo }),
    ...(recipient === undefined ? {} : { recipient }),
    ...(confirmationNotOnOrAfter === undefined ? {} : { confirmationNotOnOrAfter }),
    ...(notBefore === undefined ? {} : { notBefore }),
    ...(notOnOrAfter === undefined ? {} : { notOnOrAfter }),
    audiences: (conditions === undefined ? [] : childrenNS(conditions, saml, 'AudienceRestriction'))
      .flatMap((r) => childrenNS(r, saml, 'Audience'))
      .map((a) => textOf(a)),
    authnInstant: time(authn.getAttribute('AuthnInstant')),
    authnContextClassRef: textOf(one(context, 'AuthnContextClassRef')),
    attributes,
  };
}

function one(parent: Element, name: string): Element {
  const found = childrenNS(parent, saml, name);
  if (found.length !== 1 || found[0] === undefined) {
    throw new AssertionError('ASSERTION_CLAIMS_INVALID', `the assertion must have exactly one ${name}`);
  }
  return found[0];
}

function textOf(element: Element | undefined): string {
  return (element?.textContent ?? '').trim();
}

function time(value: string | null): number {
  const ms = value === null || !/Z$|[+-]\d\d:\d\d$/.test(value) ? NaN : Date.parse(value);
  if (Number.isNaN(ms))
    throw new AssertionError('ASSERTION_CLAIMS_INVALID', 'a time of the assertion is not a dateTime');
  return ms;
}

function optionalTime(element: Element | undefined, name: string): number | undefined {
  return element?.hasAttribute(name) ? time(element.getAttribute(name)) : undefined;
}
