/**
 * The one registry of the statuses a SignResponse carries (ELN-0607 §2.2.2, ELN-0603 §3.1.7): every refusal
 * of the DSS-Ext door names one of these keys, and only here are they mapped to ResultMajor/ResultMinor.
 */
const MAJOR = 'urn:oasis:names:tc:dss:1.0:resultmajor:';
const MINOR = 'urn:oasis:names:tc:dss:1.0:resultminor:';
const SIG_STATUS = 'http://id.elegnamnden.se/sig-status/1.0/';
const SIG_STATUS_11 = 'http://id.swedenconnect.se/sig-status/1.1/';

export const DSS_STATUS = {
  SUCCESS: { major: `${MAJOR}Success` },
  REQUESTER_ERROR: { major: `${MAJOR}RequesterError` },
  NOT_SUPPORTED: { major: `${MAJOR}RequesterError`, minor: `${MINOR}NotSupported` },
  REQUEST_EXPIRED: { major: `${MAJOR}RequesterError`, minor: `${SIG_STATUS}req-expired` },
  USER_MISMATCH: { major: `${MAJOR}ResponderError`, minor: `${SIG_STATUS}user-mismatch` },
  UNSUPPORTED_LOA: { major: `${MAJOR}ResponderError`, minor: `${SIG_STATUS}unsupported-loa` },
  SIGN_MESSAGE_ERROR: { major: `${MAJOR}ResponderError`, minor: `${SIG_STATUS}sigmessage-error` },
  USER_CANCEL: { major: `${MAJOR}ResponderError`, minor: `${SIG_STATUS}user-cancel` },
  AUTHN_FAILED: { major: `${MAJOR}ResponderError`, minor: `${SIG_STATUS_11}authn-failed` },
  SECURITY_VIOLATION: { major: `${MAJOR}ResponderError`, minor: `${SIG_STATUS_11}security-violation` },
  GENERAL_ERROR: { major: `${MAJOR}ResponderError`, minor: `${MINOR}GeneralError` },
} as const satisfies Record<string, { readonly major: string; readonly minor?: string }>;

export type DssStatus = keyof typeof DSS_STATUS;
