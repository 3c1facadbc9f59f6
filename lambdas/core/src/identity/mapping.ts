import { claimAttribute } from './auth-context';
import { InvalidIdentityError, validateSignerIdentity } from './certificate-profile';
import type { AttributeSource, ClaimMapping, SignerIdentity, SubjectField } from './types';
import { AssertionError } from './errors';

/** The Swedish OpenID Connect profile's claims (oidc-sweden "Claims and Scopes Specification"). */
export const SWEDISH_OIDC_CLAIMS = {
  personalIdentityNumber: 'https://id.oidc.se/claim/personalIdentityNumber',
  givenName: 'given_name',
  familyName: 'family_name',
  name: 'name',
} as const;

/** Default mapping: Swedish eID assertions; serialNumber is the personal identity number as issued. */
export const SWEDISH_CLAIM_MAPPING: ClaimMapping = {
  givenName: SWEDISH_OIDC_CLAIMS.givenName,
  surname: SWEDISH_OIDC_CLAIMS.familyName,
  commonName: SWEDISH_OIDC_CLAIMS.name,
  serialNumber: SWEDISH_OIDC_CLAIMS.personalIdentityNumber,
  serialNumberPrefix: '',
  country: { value: 'SE' },
};

function claimText(payload: Readonly<Record<string, unknown>>, claim: string): string | undefined {
  const value = payload[claim];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') {
    throw new AssertionError('ASSERTION_CLAIMS_INVALID', `identity claim ${claim} is not a string`);
  }
  return value;
}

/**
 * The certificate subject from verified claims, through the configured mapping, validated by the same
 * certificate profile the CA applies. Throws AssertionError (ASSERTION_CLAIMS_INVALID) naming the claim
 * and the problem, never the value.
 */
export function signerFromClaims(
  payload: Readonly<Record<string, unknown>>,
  mapping: ClaimMapping,
): SignerIdentity {
  const givenName = claimText(payload, mapping.givenName);
  const surname = claimText(payload, mapping.surname);
  const number = claimText(payload, mapping.serialNumber);
  const claimOf: Record<SubjectField, string> = {
    givenName: mapping.givenName,
    surname: mapping.surname,
    commonName: mapping.commonName,
    serialNumber: mapping.serialNumber,
    country: 'claim' in mapping.country ? mapping.country.claim : 'country (configured)',
  };
  const candidate = {
    givenName,
    surname,
    commonName:
      claimText(payload, mapping.commonName) ??
      (givenName && surname ? `${givenName} ${surname}` : undefined),
    serialNumber: number === undefined ? undefined : `${mapping.serialNumberPrefix}${number}`,
    country: 'claim' in mapping.country ? claimText(payload, mapping.country.claim) : mapping.country.value,
  };
  try {
    return validateSignerIdentity(candidate);
  } catch (err) {
    if (err instanceof InvalidIdentityError) {
      throw new AssertionError(
        'ASSERTION_CLAIMS_INVALID',
        `identity claim ${claimOf[err.field]} is invalid: ${err.problem}`,
      );
    }
    throw err;
  }
}

/**
 * Which claim each subject attribute came from, with the value the token carried (before any prefix or
 * normalisation), for the certificate's authentication context: the attributes signerFromClaims took
 * from the token, in subject order. A common name made of the given name and surname, and a configured
 * country, came from no claim and have none. Call it on a payload signerFromClaims accepted.
 */
export function claimSources(
  payload: Readonly<Record<string, unknown>>,
  mapping: ClaimMapping,
): AttributeSource[] {
  const fields: Array<[SubjectField, string | undefined]> = [
    ['country', 'claim' in mapping.country ? mapping.country.claim : undefined],
    ['surname', mapping.surname],
    ['givenName', mapping.givenName],
    ['serialNumber', mapping.serialNumber],
    ['commonName', mapping.commonName],
  ];
  const sources: AttributeSource[] = [];
  for (const [field, claim] of fields) {
    const value = claim === undefined ? undefined : claimText(payload, claim);
    if (claim !== undefined && value !== undefined) sources.push(claimAttribute(field, claim, value));
  }
  return sources;
}
