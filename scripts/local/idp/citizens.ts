/**
 * Fictitious test citizens of the local IdP. Personal identity numbers are 12 digits (YYYYMMDDNNNC) with a
 * valid Luhn check digit; none is meant to belong to a real person. Tests and demos pick them by index.
 */
import { createHash } from 'node:crypto';
import { LOA, type Loa } from './profile';

export interface TestCitizen {
  /** Opaque, stable subject identifier (not the personal number, which is a claim of its own). */
  readonly sub: string;
  readonly personalIdentityNumber: string;
  readonly givenName: string;
  readonly familyName: string;
  readonly name: string;
  /** The highest level of assurance this citizen's eID reaches. */
  readonly loa: Loa;
}

/**
 * A fixed-salt hash, so the subject stays the same across restarts and machines without a database.
 * (Fixture data: the salt is public and the numbers fictitious, so this hides nothing and need not.)
 */
function subjectOf(personalIdentityNumber: string): string {
  return createHash('sha256')
    .update(`local-idp/subject/v1:${personalIdentityNumber}`)
    .digest('base64url')
    .slice(0, 32);
}

function citizen(
  personalIdentityNumber: string,
  givenName: string,
  familyName: string,
  loa: Loa,
): TestCitizen {
  return {
    sub: subjectOf(personalIdentityNumber),
    personalIdentityNumber,
    givenName,
    familyName,
    name: `${givenName} ${familyName}`,
    loa,
  };
}

export const TEST_CITIZENS: readonly TestCitizen[] = [
  citizen('197306152385', 'Åsa', 'Öberg', LOA.loa3),
  citizen('197811099824', 'Jean-Luc', 'Bergström', LOA.loa3),
  citizen('197001011233', 'Karin', 'Andersson', LOA.loa4),
  citizen('198102273854', 'Nils', 'Pärsson', LOA.loa2),
  citizen('198407044745', 'Märta', 'Ek-Lindqvist', LOA.loa3),
  citizen('197503222460', 'Björn', 'Sjöö', LOA.loa4),
];

/** Index of the only citizen whose eID reaches loa2 and no higher. */
export const LOA2_CITIZEN_INDEX = 3;

export function findCitizenByPersonalNumber(personalIdentityNumber: string): TestCitizen | undefined {
  return TEST_CITIZENS.find((c) => c.personalIdentityNumber === personalIdentityNumber);
}

export function findCitizenBySub(sub: string): TestCitizen | undefined {
  return TEST_CITIZENS.find((c) => c.sub === sub);
}
