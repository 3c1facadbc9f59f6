export { RefreshingJwks, publicSigningKeys, type JwksFetcher, type RefreshingJwksOptions } from './jwks';
export { fetchJson, jwksFetcher } from './sources';
export { JwsAssertionVerifier, type JwsAssertionVerifierOptions } from './verifier';
export { createAssertionVerifier } from './create';
export { refreshIssuerKeys, type KeyParameterStore, type RefreshResult } from './refresh';
