import { caCertsEnv, loginEnv, type FunctionSpec } from './spec';

/** The TSA, like the responder, logs in as its own crypto user, which owns the TSA key and nothing else. */
export const tsa: FunctionSpec = {
  name: 'tsa',
  description:
    "Time-stamping authority (RFC 3161): public behind the PKI endpoint, and the signer's for B-T and up",
  memorySize: 512,
  timeoutSeconds: 10,
  network: { kind: 'hsm', cryptoUser: 'tsa' },
  environment: (deps) => ({ ...loginEnv(deps, 'tsa'), ...caCertsEnv(deps) }),
  grants: (grant) => {
    // The certificates (its own among them), read only; no table.
    grant.login();
    grant.caCertificates(['root', 'issuing', 'tsa']);
  },
};
