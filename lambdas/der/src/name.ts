import { AsnConvert } from '@peculiar/asn1-schema';
import { AttributeTypeAndValue, AttributeValue, Name, RelativeDistinguishedName } from '@peculiar/asn1-x509';
import type { DirectoryStringKind } from '@pipeline/core/identity';
import { derChildren, derElement } from './der';

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

/** A DirectoryString's tag by kind (X.680: UTF8String 12, PrintableString 19). */
const STRING_TAGS: Readonly<Record<DirectoryStringKind, number>> = {
  utf8String: 0x0c,
  printableString: 0x13,
};
/** A lone UTF-16 surrogate: the schema cannot encode it (and throws); such a name takes its path. */
const LONE_SURROGATE = /\p{Cs}/u;
/** The AttributeType OIDs met so far, as the schema encodes them; bounded (a profile has a handful). */
const attributeTypes = new Map<string, Buffer>();

function attributeTypeDer(oid: string): Buffer {
  let der = attributeTypes.get(oid);
  if (!der) {
    const sample = Buffer.from(
      AsnConvert.serialize(encodeName([{ oid, kind: 'printableString', value: 'x' }])),
    );
    // Name { RDN { AttributeTypeAndValue { type, value } } }
    der = derChildren(derChildren(derChildren(sample)[0])[0])[0];
    if (attributeTypes.size < 64) attributeTypes.set(oid, der);
  }
  return der;
}

/**
 * The DER of encodeName(attributes), byte for byte, spliced: each AttributeType's OID as the schema
 * encodes it (once per OID), the values' octets (UTF-8, or one octet per character as the schema writes a
 * PrintableString) in their tags, the lengths recomputed (tests: name.property.test.ts).
 */
export function nameDerOf(attributes: readonly NameAttribute[]): Buffer {
  if (attributes.some((a) => LONE_SURROGATE.test(a.value))) {
    return Buffer.from(AsnConvert.serialize(encodeName(attributes)));
  }
  return derElement(
    0x30,
    Buffer.concat(
      attributes.map((a) =>
        derElement(
          0x31,
          derElement(
            0x30,
            Buffer.concat([
              attributeTypeDer(a.oid),
              derElement(
                STRING_TAGS[a.kind],
                Buffer.from(a.value, a.kind === 'utf8String' ? 'utf8' : 'latin1'),
              ),
            ]),
          ),
        ),
      ),
    ),
  );
}
