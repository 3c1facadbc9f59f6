import { AttributeTypeAndValue, AttributeValue, Name, RelativeDistinguishedName } from '@peculiar/asn1-x509';
import type { DirectoryStringKind } from '@pipeline/core/identity';

/** One attribute of a distinguished name (the certificate profile's SubjectAttribute fits). */
export interface NameAttribute {
  readonly oid: string;
  readonly kind: DirectoryStringKind;
  readonly value: string;
}

/**
 * Encodes a Name structurally, one attribute per RDN. Values are never joined into a DN string, so `,`,
 * `=` or `+` inside a value can never start another attribute.
 */
export function encodeName(attributes: readonly NameAttribute[]): Name {
  return new Name(
    attributes.map(
      (a) =>
        new RelativeDistinguishedName([
          new AttributeTypeAndValue({ type: a.oid, value: new AttributeValue({ [a.kind]: a.value }) }),
        ]),
    ),
  );
}
