export { RefreshingJwks, publicSigningKeys } from './jwks';
export { fetchJson } from './sources';
export { JwsAssertionVerifier } from './verifier';
export { createAssertionVerifier } from './create';
export { refreshIssuerKeys, type KeyParameterStore } from './refresh';
export { OidcRelyingParty } from './relying-party';
