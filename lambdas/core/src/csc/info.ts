import { CONFORMANCE_LEVELS, SIGNATURE_FORMAT_PROFILES } from './authorization';
import { allSignAlgoOids } from './credentials';

/** The CSC API version this service implements. */
const CSC_SPECS = '2.0.0.2';

/** The CSC methods this service answers (`info`'s `methods`). */
const CSC_METHODS = [
  'info',
  'oauth2/pushed_authorize',
  'oauth2/authorize',
  'oauth2/token',
  'credentials/list',
  'credentials/info',
  'signatures/signHash',
  'signatures/signDoc',
  'signatures/signPolling',
  'signatures/timestamp',
] as const;

/** CSC signed_envelope_property values each signature_format offers. */
const ENVELOPE_PROPERTIES: Readonly<Record<string, readonly string[]>> = {
  C: ['Detached'],
  P: ['Certification', 'Revision'],
};

export interface CscServiceDescription {
  readonly name: string;
  readonly logo: string;
  readonly region: string;
  readonly lang: string;
  readonly description: string;
  /** The base URI of the OAuth 2.0 authorization server (oauth2/authorize and oauth2/token under it). */
  readonly oauth2: string;
}

/** The `info` answer (CSC v2 11.1). */
export function cscInfo(service: CscServiceDescription): Record<string, unknown> {
  return {
    specs: CSC_SPECS,
    name: service.name,
    logo: service.logo,
    region: service.region,
    lang: service.lang,
    description: service.description,
    authType: ['oauth2code'],
    oauth2: service.oauth2,
    asynchronousOperationMode: true,
    methods: [...CSC_METHODS],
    validationInfo: true,
    signAlgorithms: { algos: allSignAlgoOids() },
    // signDoc's formats: a detached CAdES CMS (C); for PAdES (P) the CMS the client embeds, as a
    // certification or an approval (revision) signature; each format's envelope properties in order.
    signature_formats: {
      formats: Object.keys(SIGNATURE_FORMAT_PROFILES),
      envelope_properties: Object.keys(SIGNATURE_FORMAT_PROFILES).map((f) => ENVELOPE_PROPERTIES[f]),
    },
    conformance_levels: Object.keys(CONFORMANCE_LEVELS),
  };
}
