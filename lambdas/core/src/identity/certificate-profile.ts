import type { SignerIdentity, SubjectField } from './types';
import { ClientVisibleError } from '../shared/errors';

/**
 * The natural-person certificate profile: which identity values go into a subject name, how each is
 * validated, and which ASN.1 string type encodes it (RFC 5280 4.1.2.4 / appendix A). Pure data: the PKI
 * module turns the attributes into DER. Values are never echoed in errors (they are personal data).
 */

/** RFC 5280: countryName and serialNumber are PrintableString, every other DirectoryString is UTF8String. */
export type DirectoryStringKind = 'printableString' | 'utf8String';

export interface SubjectAttribute {
  readonly field: SubjectField;
  /** Attribute type OID (X.520). */
  readonly oid: string;
  readonly kind: DirectoryStringKind;
  /** Validated value (names in Unicode NFC). */
  readonly value: string;
}

export type IdentityProblem =
  'missing' | 'too-long' | 'not-well-formed' | 'forbidden-characters' | 'unknown-country';

/** An identity value does not fit the profile. Names the field and the problem, never the value. */
export class InvalidIdentityError extends ClientVisibleError {
  public override readonly name = 'InvalidIdentityError';
  public constructor(
    public readonly field: SubjectField,
    public readonly problem: IdentityProblem,
  ) {
    super(`identity value ${field} is invalid: ${problem}`, 'INVALID_IDENTITY');
  }
}

export const SUBJECT_OIDS: Readonly<Record<SubjectField, string>> = {
  country: '2.5.4.6',
  surname: '2.5.4.4',
  givenName: '2.5.4.42',
  serialNumber: '2.5.4.5',
  commonName: '2.5.4.3',
};

/**
 * Upper bounds in characters. RFC 5280 ub-common-name and ub-serial-number are 64; ub-name (32768) is far
 * more than any real name, so given name and surname get the common-name bound as well.
 */
export const SUBJECT_MAX_LENGTH: Readonly<Record<SubjectField, number>> = {
  country: 2,
  surname: 64,
  givenName: 64,
  serialNumber: 64,
  commonName: 64,
};

/**
 * Person names: letters (any script) and combining marks, separated by single spaces, hyphens,
 * apostrophes or full stops. No digits, no control or format characters (bidi overrides, zero-width), no
 * DN syntax characters (`,` `=` `+` `;` `"` `\` `<` `>` `#`), no U+FFFD (the mark of bytes that were not UTF-8).
 */
const NAME = /^[\p{L}\p{M}]+(?:[ '\u2019.-]{1,2}[\p{L}\p{M}]+)*\.?$/u;

/**
 * Personal identity number: letters, digits and inner hyphens only (e.g. `197001011234` or the ETSI
 * semantics form `PNOSE-197001011234`), a strict subset of PrintableString.
 */
const SERIAL_NUMBER = /^[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*$/;

/** ISO 3166-1 alpha-2 officially assigned codes (249). */
const ISO_3166_ALPHA_2 = new Set(
  (
    'AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV ' +
    'BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ' +
    'ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE ' +
    'IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY ' +
    'MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU ' +
    'NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM ' +
    'SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE ' +
    'VG VI VN VU WF WS YE YT ZA ZM ZW'
  ).split(' '),
);

export function isIsoCountryCode(value: string): boolean {
  return ISO_3166_ALPHA_2.has(value);
}

/** Lone UTF-16 surrogates cannot be encoded as UTF-8 (a JS string may still hold them). */
function isWellFormed(value: string): boolean {
  return !/\p{Cs}/u.test(value);
}

function text(identity: unknown, field: SubjectField): string {
  const value = (identity as Record<string, unknown> | null | undefined)?.[field];
  if (typeof value !== 'string' || value.length === 0) throw new InvalidIdentityError(field, 'missing');
  if (!isWellFormed(value)) throw new InvalidIdentityError(field, 'not-well-formed');
  return value;
}

/** Length in characters (code points), as the ASN.1 upper bounds count them. */
function checkLength(field: SubjectField, value: string): void {
  if ([...value].length > SUBJECT_MAX_LENGTH[field]) throw new InvalidIdentityError(field, 'too-long');
}

function personName(identity: unknown, field: 'givenName' | 'surname' | 'commonName'): string {
  const raw = text(identity, field);
  // Bound before normalising so a hostile megabyte string is not normalised first.
  if (raw.length > SUBJECT_MAX_LENGTH[field] * 4) throw new InvalidIdentityError(field, 'too-long');
  const value = raw.normalize('NFC');
  checkLength(field, value);
  if (!NAME.test(value)) throw new InvalidIdentityError(field, 'forbidden-characters');
  return value;
}

/** Validates every value of an identity; returns it with names in NFC. Throws InvalidIdentityError. */
export function validateSignerIdentity(identity: unknown): SignerIdentity {
  const country = text(identity, 'country');
  checkLength('country', country);
  if (!isIsoCountryCode(country)) throw new InvalidIdentityError('country', 'unknown-country');
  const serialNumber = text(identity, 'serialNumber');
  checkLength('serialNumber', serialNumber);
  if (!SERIAL_NUMBER.test(serialNumber))
    throw new InvalidIdentityError('serialNumber', 'forbidden-characters');
  return {
    commonName: personName(identity, 'commonName'),
    givenName: personName(identity, 'givenName'),
    surname: personName(identity, 'surname'),
    serialNumber,
    country,
  };
}

/**
 * The subject name of a natural-person certificate, most significant first (C, SN, GN, serialNumber,
 * CN), one attribute per RDN. Validates first, so only profile-conforming values are ever encoded.
 */
export function subjectAttributes(identity: unknown): readonly SubjectAttribute[] {
  const valid = validateSignerIdentity(identity);
  const attribute = (field: SubjectField, value: string): SubjectAttribute => ({
    field,
    oid: SUBJECT_OIDS[field],
    kind: field === 'country' || field === 'serialNumber' ? 'printableString' : 'utf8String',
    value,
  });
  return [
    attribute('country', valid.country),
    attribute('surname', valid.surname),
    attribute('givenName', valid.givenName),
    attribute('serialNumber', valid.serialNumber),
    attribute('commonName', valid.commonName),
  ];
}
