/**
 * Names from the Swedish OpenID Connect profile (oidc-sweden: claims and scopes, and the signature
 * extension) and the levels of assurance of the Swedish eID framework, as the local IdP uses them.
 */

/** Claim and scope names (https://oidc.se/specifications/swedish-oidc-claims-specification-1_0.html). */
export const SWEDISH_CLAIMS = {
  personalIdentityNumber: 'https://id.oidc.se/claim/personalIdentityNumber',
  givenName: 'given_name',
  familyName: 'family_name',
  name: 'name',
} as const;

export const SWEDISH_SCOPES = {
  naturalPersonNumber: 'https://id.oidc.se/scope/naturalPersonNumber',
  profile: 'profile',
} as const;

/** The scope an e-service asks for to get names and the personal identity number in the ID token. */
export const SIGNING_SCOPE = `openid ${SWEDISH_SCOPES.profile} ${SWEDISH_SCOPES.naturalPersonNumber}`;

/** Levels of assurance (acr values), lowest first. */
export const LOA = {
  loa2: 'http://id.elegnamnden.se/loa/1.0/loa2',
  loa3: 'http://id.elegnamnden.se/loa/1.0/loa3',
  loa4: 'http://id.elegnamnden.se/loa/1.0/loa4',
} as const;

export type Loa = (typeof LOA)[keyof typeof LOA];

export const LOA_VALUES: readonly Loa[] = [LOA.loa2, LOA.loa3, LOA.loa4];

const isLoa = (value: string): value is Loa => (LOA_VALUES as readonly string[]).includes(value);

/**
 * The acr to report for an authentication at `level`, given the acr values the client asked for: the
 * highest requested level the authentication meets (a loa4 login satisfies a loa3 request), else the
 * level itself when the request was voluntary (acr_values, or no request at all), else undefined: an
 * essential acr request (claims parameter) that the citizen cannot meet.
 */
export function chooseAcr(level: Loa, requested: readonly string[], essential: boolean): Loa | undefined {
  const rank = LOA_VALUES.indexOf(level);
  const met = requested.filter(isLoa).filter((value) => LOA_VALUES.indexOf(value) <= rank);
  if (met.length > 0) return met.sort((a, b) => LOA_VALUES.indexOf(b) - LOA_VALUES.indexOf(a))[0];
  return essential && requested.length > 0 ? undefined : level;
}
