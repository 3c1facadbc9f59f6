import type { SignRequestRecord } from '@pipeline/core/signing';

type ValidationDataView = SignRequestRecord['validationData'];

/** One document of a view: the fields a door reads typed, the rest as the API answers them. */
export interface DocumentView {
  readonly signature?: string;
  readonly cms?: string;
  /** A DSS-Ext sign task's bytes as signed (the door's alone). */
  readonly toBeSignedBytes?: string;
  readonly adesObject?: string;
  readonly validationData?: ValidationDataView;
  readonly [field: string]: unknown;
}

/** A request as GET answers it: the fields a door reads typed, the rest as the API answers them. */
export interface SignRequestView {
  readonly id: string;
  readonly status: SignRequestRecord['status'];
  readonly signature?: string;
  readonly cms?: string;
  readonly validationData?: ValidationDataView;
  readonly documents?: readonly DocumentView[];
  readonly error?: SignRequestRecord['error'];
  readonly [field: string]: unknown;
}

/** The public view of a request record: what GET returns (no personal data beyond what the client sent). */
export function toView(record: SignRequestRecord): SignRequestView {
  const iso = (ms?: number): string | undefined =>
    ms === undefined ? undefined : new Date(ms).toISOString();
  const documents = record.documents
    ? {
        documents: record.documents.map((d, index) => {
          // The signatures only of a signed request, and only all of them.
          const result = record.status === 'signed' ? record.documentResults?.[index] : undefined;
          return {
            index,
            name: d.name,
            digestAlgorithm: d.digestAlgorithm,
            format: d.format,
            profile: d.profile,
            level: d.level,
            minimumLevel: d.minimumLevel,
            reachedLevel: result?.reachedLevel,
            signature: result?.signature,
            cms: result?.cms,
            validationData: result?.validationData,
            toBeSignedBytes: result?.toBeSignedBytes,
            adesObject: result?.adesObject,
          };
        }),
      }
    : undefined;
  return {
    id: record.id,
    status: record.status,
    ...(documents ? {} : { signature: record.signature, cms: record.cms }),
    certificate: record.certificate,
    certificateSerial: record.certificateSerial,
    receipt: record.receipt,
    chain: record.chain,
    keyType: record.keyType,
    signatureAlgorithm: record.signatureAlgorithm,
    ...(documents ?? {
      format: record.format ?? 'raw',
      profile: record.profile,
      level: record.level,
      minimumLevel: record.minimumLevel,
      reachedLevel: record.reachedLevel,
      validationData: record.validationData,
      digestAlgorithm: record.digestAlgorithm,
    }),
    signMessageHash: record.signMessageHash,
    pooledKey: record.pooledKey,
    timings: {
      receivedAt: iso(record.receivedAt),
      startedAt: iso(record.startedAt),
      keyAcquiredAt: iso(record.keyAcquiredAt),
      finishedAt: iso(record.finishedAt),
      waitMs: record.startedAt === undefined ? undefined : record.startedAt - record.receivedAt,
      processMs:
        record.startedAt === undefined || record.finishedAt === undefined
          ? undefined
          : record.finishedAt - record.startedAt,
      // Per-stage durations of the finishing attempt (claim, unwrap, sign, csr, issue, ...): benchmarks.
      stageMs: record.stageMs,
    },
    error: record.error,
  };
}
