/**
 * The tamper-evident audit log as the domain sees it: events (ids and hashes only, never personal data),
 * chained entries, chain heads, signed checkpoints, and the ports the log needs (a store, a signer) and
 * offers (AuditSink, which the signing core, keygen and the CA take as an optional dependency).
 */
import type { KeyType } from '../shared/algorithms';
import type { RevocationReason, StoredRevokeOutcome } from '../pki/revocation';
import type { CertificateToRecord } from '../pki/certificate-store';

/** Lower-case hex SHA-256 (64 characters). */
export type Sha256Hex = string;

/** Why a pool key was thrown away instead of being used. */
export type KeyDiscardReason =
  | 'expired'
  | 'unwrap-failed'
  | 'public-key-mismatch'
  | 'profile-mismatch'
  | 'already-certified'
  | 'public-key-not-canonical'
  | 'sign-failed'
  | 'other';

/** A batch of pool keys was generated and stored. `keyIdsHash` = hashIds(keyIds) (see events.ts). */
export interface BatchGeneratedEvent {
  readonly type: 'pool.batch-generated';
  readonly keyType: KeyType;
  readonly count: number;
  readonly keyIdsHash: Sha256Hex;
}

/** A pool key was claimed (removed from the pool) for a request. */
export interface KeyClaimedEvent {
  readonly type: 'pool.key-claimed';
  readonly keyId: string;
  readonly requestId?: string;
}

/** The unwrapped HSM object of a pool key (or an on-the-fly key) was destroyed. */
export interface KeyDestroyedEvent {
  readonly type: 'pool.key-destroyed';
  readonly keyId: string;
  readonly requestId?: string;
}

/** A pool key was expired or discarded (bad blob, public key mismatch, ...) and will never be used. */
export interface KeyDiscardedEvent {
  readonly type: 'pool.key-discarded';
  readonly keyId: string;
  readonly reason: KeyDiscardReason;
  readonly requestId?: string;
  /**
   * SHA-256 of the key's canonical SubjectPublicKeyInfo, for a key discarded for its stored encoding
   * (`public-key-not-canonical`): which key was put back re-encoded.
   */
  readonly keySpkiHash?: Sha256Hex;
}

/** A digest was signed for a request: hashes of the signature and of the key's SubjectPublicKeyInfo. */
export interface SignatureMadeEvent {
  readonly type: 'signature.made';
  readonly requestId: string;
  readonly signatureHash: Sha256Hex;
  readonly keySpkiHash: Sha256Hex;
  /** Pool key id; absent for an on-the-fly key. */
  readonly keyId?: string;
  /**
   * For a request with `documents`: which document this signature is of (its index in the request);
   * one event per document, all with the same key.
   */
  readonly documentIndex?: number;
}

/** The CA issued a certificate for a request: its serial (hex) and a hash of the subject (no names). */
export interface CertificateIssuedEvent {
  readonly type: 'certificate.issued';
  readonly requestId: string;
  readonly serial: string;
  readonly subjectHash: Sha256Hex;
  /** SHA-256 of the identity assertion (ID token or request object) the subject was taken from. */
  readonly assertionHash?: Sha256Hex;
  /** SHA-256 of the certified SubjectPublicKeyInfo: a key certified twice shows here. */
  readonly keySpkiHash?: Sha256Hex;
  /** The sign message the citizen approved (signMessageHash), when the request had one. */
  readonly signMessageHash?: Sha256Hex;
}

/**
 * The CA refused to certify a key for a request: why (its code: an assertion that does not verify or
 * bind, a replayed assertion, a public key certified before, ...), for which key and which evidence.
 */
export interface CertificateRefusedEvent {
  readonly type: 'certificate.refused';
  readonly requestId: string;
  readonly code: string;
  readonly keySpkiHash: Sha256Hex;
  /** SHA-256 of what was presented as the assertion (absent when nothing was). */
  readonly assertionHash?: Sha256Hex;
  /** Set when a certificate had been signed and its recording was refused (it was never released). */
  readonly serial?: string;
}

/** The signer refused a request before any key was used for it (e.g. no evidence of who signs). */
export interface RequestRefusedEvent {
  readonly type: 'request.refused';
  readonly requestId: string;
  readonly code: string;
}

/**
 * The CRL publication kept a revocation of the previously published CRL that the certificate records no
 * longer show (a record edited or deleted): the serial stays revoked.
 */
export interface RevocationRestoredEvent {
  readonly type: 'revocation.restored';
  readonly serial: string;
}

/** A certificate was revoked: its serial, the RFC 5280 reason, and the request it was issued for. */
export interface CertificateRevokedEvent {
  readonly type: 'certificate.revoked';
  readonly serial: string;
  readonly reason: RevocationReason;
  readonly requestId?: string;
}

/**
 * The CA released a one-time credential's certificate (issued for `credentialRequestId`) to the one
 * request a second login approved: its key signs for that request only.
 */
export interface CredentialActivatedEvent {
  readonly type: 'credential.activated';
  readonly requestId: string;
  readonly credentialRequestId: string;
  readonly serial: string;
  readonly keySpkiHash: Sha256Hex;
  /** SHA-256 of the second login's assertion. */
  readonly assertionHash?: Sha256Hex;
}

export type AuditEvent =
  | BatchGeneratedEvent
  | CredentialActivatedEvent
  | KeyClaimedEvent
  | KeyDestroyedEvent
  | KeyDiscardedEvent
  | SignatureMadeEvent
  | CertificateIssuedEvent
  | CertificateRefusedEvent
  | RequestRefusedEvent
  | RevocationRestoredEvent
  | CertificateRevokedEvent;

/** Where a chain stands: the last entry's sequence and hash (sequence 0 and GENESIS_HASH when empty). */
export interface ChainHead {
  readonly chain: number;
  readonly sequence: number;
  readonly hash: Sha256Hex;
}

/**
 * One link of a chain: a batch of events under a Merkle tree. hash = entryHash(chain, sequence, prevHash,
 * merkleRoot(events), events.length, timestamp); events are kept as their canonical JSON texts so a
 * verifier re-hashes exactly the stored bytes.
 */
export interface AuditEntry {
  readonly chain: number;
  readonly sequence: number;
  readonly prevHash: Sha256Hex;
  /** Canonical JSON of each AuditEvent, in the order they were committed (the tree's leaves). */
  readonly events: readonly string[];
  /** Epoch milliseconds when the entry was built. */
  readonly timestamp: number;
  readonly hash: Sha256Hex;
}

/**
 * What an append tells the caller: where its event landed, and the proof that it is there. The entry
 * (chain, sequence) commits to the event through its Merkle root: the leaf at `leafIndex` of a tree of
 * `treeSize` leaves, with `path` its RFC 9162 inclusion path. `hash` is the entry's hash.
 */
export interface AuditReceipt {
  readonly chain: number;
  readonly sequence: number;
  readonly hash: Sha256Hex;
  readonly leafIndex: number;
  readonly treeSize: number;
  readonly path: readonly Sha256Hex[];
  /**
   * The audit key's signature over the entry as its chain's head when it was written (see signed-head.ts):
   * made before the receipt was handed out, it proves the entry existed even if the table is cut short.
   * Absent when the writer's HSM login cannot reach the audit key.
   */
  readonly head?: SignedHead;
}

/** A revocation as the CA answers it: the store's outcome, a new one with its audit receipt. */
export type RevokeOutcome =
  | (Extract<StoredRevokeOutcome, { outcome: 'revoked' }> & {
      /** The revocation's audit receipt, when an audit log took the event. */
      readonly receipt?: AuditReceipt;
    })
  | Exclude<StoredRevokeOutcome, { outcome: 'revoked' }>;

/** A request's revocation, asked for by a client: also refused when the CA has it as another's. */
export type RequestRevokeOutcome =
  | RevokeOutcome
  | { readonly outcome: 'not-owned' }
  /** A one-time credential's retirement refused: its certificate was released to a request (used). */
  | { readonly outcome: 'used' };

/** The audit key's signature over one chain head (chain, sequence and entry hash of the receipt). */
export interface SignedHead {
  readonly keyLabel: string;
  readonly algorithm: CheckpointAlgorithm;
  /** Base64 of the DER ECDSA signature over SHA-384(headStatement(...)). */
  readonly signature: string;
}

/** The signed content of a checkpoint: every chain head at one moment, linked to the previous checkpoint. */
export interface CheckpointBody {
  readonly version: 1;
  /** 1, 2, 3, ... */
  readonly sequence: number;
  /** checkpointHash of the previous checkpoint (GENESIS_HASH for the first). */
  readonly prevHash: Sha256Hex;
  readonly createdAt: number;
  readonly chains: number;
  readonly heads: readonly ChainHead[];
  /** Label of the audit key that signed it (the key's version is part of the label). */
  readonly keyLabel: string;
  readonly algorithm: CheckpointAlgorithm;
}

export type CheckpointAlgorithm = 'ECDSA-P384-SHA384';

export interface SignedCheckpoint {
  readonly body: CheckpointBody;
  /** DER-encoded ECDSA signature over SHA-384(canonical body). */
  readonly signature: Buffer;
  /** SHA-256 of the canonical body: what the next checkpoint links to. */
  readonly hash: Sha256Hex;
}

/** Signs a SHA-384 digest with the audit key (in the HSM). */
export interface AuditSigner {
  readonly keyLabel: string;
  readonly algorithm: CheckpointAlgorithm;
  sign(digest: Buffer): Promise<Buffer>;
}

/**
 * The port the pipeline writes to. Events of one entity (a key id, a request id) always land on the same
 * chain; appendMany groups events by chain and writes each group in one transaction.
 */
export interface AuditSink {
  append(event: AuditEvent): Promise<AuditReceipt>;
  appendMany(events: readonly AuditEvent[]): Promise<readonly AuditReceipt[]>;
}

/** A stored entry as read back for verification: anything may have been tampered with, so all optional. */
export interface StoredAuditEntry {
  /** Chain from the item's partition key. */
  readonly chain: number;
  /** Position from the item's sort key (undefined when the key is not a well-formed sequence). */
  readonly position: number | undefined;
  /** Raw sort key, to name malformed items. */
  readonly rawPosition: string;
  readonly entryChain?: number;
  readonly sequence?: number;
  readonly prevHash?: string;
  /** Canonical event texts; undefined when the stored attribute is not a list of strings. */
  readonly events?: readonly string[];
  readonly timestamp?: number;
  readonly hash?: string;
}

export interface StoredCheckpoint {
  /** Position from the item's sort key. */
  readonly position: number | undefined;
  readonly rawPosition: string;
  /** Canonical body text as stored (parsed by the verifier). */
  readonly body?: string;
  readonly signature?: Buffer;
}

/** The whole log as read back from storage, tampered or not. */
export interface StoredAuditLog {
  readonly entries: ReadonlyMap<number, readonly StoredAuditEntry[]>;
  readonly heads: ReadonlyMap<number, { readonly sequence?: number; readonly hash?: string }>;
  readonly checkpoints: readonly StoredCheckpoint[];
  /** Keys of items that are neither entries, heads nor checkpoints. */
  readonly foreign: readonly string[];
}

/** A signed checkpoint as written outside the table (and read back, tampered or not). */
export interface AnchoredCheckpoint {
  readonly sequence: number;
  /** Canonical body text, as signed. */
  readonly body: string;
  readonly signature: Buffer;
  readonly hash: Sha256Hex;
}

/**
 * Where signed checkpoints are copied outside the audit table, write-once: an S3 bucket with Object Lock
 * in compliance mode on AWS, a directory locally. Whoever can write the table cannot touch these.
 */
export interface AuditAnchorStore {
  /** Where the anchors are (for messages). */
  readonly location: string;
  /**
   * Writes a checkpoint unless one with its sequence is there. True when this one is (now) anchored;
   * false when a different checkpoint holds the sequence (a fork: never overwritten).
   */
  put(checkpoint: AnchoredCheckpoint): Promise<boolean>;
  /** True when a checkpoint with this sequence is anchored. */
  has(sequence: number): Promise<boolean>;
  /** Every anchored checkpoint (a full read: offline use only). */
  readAll(): Promise<StoredCheckpoint[]>;
}

/** Persistence the AuditLog needs (DynamoDB in production, memory in tests). */
/**
 * Writes of another table that an audit entry carries in its transaction, in groups: opaque to the log
 * (the adapter that stores the entries builds and reads them, e.g. DynamoDB transaction items).
 */
export type CarriedWrites = readonly (readonly unknown[])[];

/** How a carrying append ended in the store (see AuditStore.appendEntriesCarrying). */
export type CarriedAppendResult =
  | { readonly outcome: 'written' }
  | { readonly outcome: 'head-moved' }
  | { readonly outcome: 'refused'; readonly refused: readonly boolean[] };

/** How a carrying append ended (see CarryingAuditSink). */
export type CarryingAppendOutcome =
  | { readonly written: true; readonly receipts: readonly AuditReceipt[] }
  /** A carried write's condition failed (per group, true where one did): nothing written, no head moved. */
  | { readonly written: false; readonly refused: readonly boolean[] };

/**
 * An audit log that commits an entry together with other writes: the events in an entry of their own,
 * written in one transaction with `carried`, all or nothing. The chain head moves only if the
 * transaction committed; a refused one leaves no entry and hands out no receipt.
 */
export interface CarryingAuditSink {
  appendCarrying(events: readonly AuditEvent[], carried: CarriedWrites): Promise<CarryingAppendOutcome>;
}

/**
 * A certificate to record with the `certificate.issued` event that logs it; a replacement also with the
 * `certificate.revoked` event (reason `superseded`) of the serial it replaces, committed before it.
 */
export interface LoggedIssuance {
  readonly record: CertificateToRecord;
  readonly event: CertificateIssuedEvent;
  readonly revoked?: CertificateRevokedEvent;
}

/**
 * What the audit log says of the signatures made for a request: the evidence the CA needs before it
 * replaces a request's certificate (a signer appends `signature.made` before its result is stored, so a
 * signature that left the service is in the log).
 */
export interface SignatureLog {
  /**
   * Whether any entry written at or after `since` (epoch ms, by the entry's timestamp) holds a
   * `signature.made` for the request or with the key (SHA-256 of its SubjectPublicKeyInfo).
   */
  signatureMade(query: {
    readonly requestId: string;
    readonly keySpkiHash: Sha256Hex;
    readonly since: number;
  }): Promise<boolean>;
}

/**
 * How one item of recordLogged ended: `stored` (and logged); `refused`, a condition of its own failed
 * (its request, serial, assertion or key already recorded); `cancelled`, another item of its group was
 * refused. Refused or cancelled, nothing of its group was stored or logged.
 */
export type LoggedIssuanceResult = 'stored' | 'refused' | 'cancelled';

/**
 * The CA's store of issued certificates with their events: each certificate (with its register entries)
 * and the audit entry that logs it are committed together, in groups, one transaction each, all or
 * nothing. Results per item, in input order; throws when an outcome is unknown.
 */
export interface LoggedCertificateStore {
  recordLogged(items: readonly LoggedIssuance[]): Promise<LoggedIssuanceResult[]>;
  /**
   * Releases a one-time credential's certificate to one request, with its `credential.activated` event, in
   * one transaction: only if the credential's record still has that serial and no other request, its
   * serial is not revoked, and the assertion served no other request. False when a condition failed
   * (nothing written).
   */
  recordActivation?(activation: LoggedActivation): Promise<boolean>;
}

/** A one-time credential's release to the request a second login approved (see recordActivation). */
export interface LoggedActivation {
  readonly credentialRequestId: string;
  readonly requestId: string;
  readonly serialHex: string;
  readonly attemptId?: string;
  /** The second login's assertion register entry, as an issuance's. */
  readonly assertionKey: string;
  readonly assertionExpiresAt: number;
  readonly activatedAt: number;
  readonly event: CredentialActivatedEvent;
}

export interface AuditStore {
  /** Current head (consistent read); GENESIS head when the chain is empty. */
  readHead(chain: number): Promise<ChainHead>;
  readHeads(chains: number): Promise<ChainHead[]>;
  /**
   * Writes the entries and moves the head from `expected` to the last entry, atomically and only if the
   * head is still `expected`. Returns false when another appender moved the head first (lost race).
   */
  appendEntries(expected: ChainHead, entries: readonly AuditEntry[]): Promise<boolean>;
  /**
   * As appendEntries, with other writes in the same transaction (`carried`, groups of the store's own
   * write form): all or nothing. `head-moved` when another appender moved the head first; `refused` when
   * a carried write's condition failed (per group, true where one did): nothing was written either way.
   */
  appendEntriesCarrying?(
    expected: ChainHead,
    entries: readonly AuditEntry[],
    carried: CarriedWrites,
  ): Promise<CarriedAppendResult>;
  /** The stored hash of one entry (consistent read); undefined when the table holds none there. */
  readEntryHash(chain: number, sequence: number): Promise<Sha256Hex | undefined>;
  /**
   * The entries of a chain from the newest back to the first whose timestamp is before `since` (epoch
   * ms), newest first (consistent reads): what was written there since then.
   */
  readEntriesSince?(chain: number, since: number): Promise<AuditEntry[]>;
  /** The last checkpoint's sequence and hash; undefined before the first. */
  readCheckpointHead(): Promise<{ sequence: number; hash: Sha256Hex } | undefined>;
  /** Stores a checkpoint if it is the successor of the current checkpoint head. False on a lost race. */
  putCheckpoint(checkpoint: SignedCheckpoint, canonicalBody: string): Promise<boolean>;
  /** One stored checkpoint (consistent read), as written; undefined when absent. */
  readCheckpoint(sequence: number): Promise<AnchoredCheckpoint | undefined>;
  /** Everything stored, for verification (a full read: offline use only). */
  readAll(): Promise<StoredAuditLog>;
}

/** What a verifier found wrong. `sequence` names the entry (or checkpoint) by its position. */
export type AuditIssueKind =
  /** Entry content does not hash to its stored hash, or the item is malformed. */
  | 'modified'
  /** An entry that should exist is gone (a gap in the sequence, or entries before the head). */
  | 'deleted'
  /** An entry sits at a position other than its own sequence (moved or swapped). */
  | 'reordered'
  /** An entry that does not belong: a second entry for one predecessor, beyond the head, or off-key. */
  | 'inserted'
  /** Entry does not link to its predecessor's hash. */
  | 'broken-link'
  /** The head item disagrees with the last entry. */
  | 'head-mismatch'
  /** A signed checkpoint recorded more of the chain than is left, or an entry it recorded differs. */
  | 'checkpoint-mismatch'
  /** A checkpoint's signature does not verify with the audit public key (or the checkpoint is malformed). */
  | 'checkpoint-signature'
  /** Checkpoints missing, reordered or not linked to their predecessor. */
  | 'checkpoint-chain'
  /** A chain ends before the head an anchored checkpoint recorded: its newest entries were cut off. */
  | 'truncated'
  /** The entry an anchored checkpoint recorded was replaced: the head was moved back and written again. */
  | 'rewound'
  /** Anchored checkpoints missing between two that are there (or before the first). */
  | 'anchor-gap'
  /** A checkpoint in the table that was never anchored (or whose anchor differs). */
  | 'not-anchored'
  /** Entries older than the allowed lag that no anchored checkpoint covers yet. */
  | 'uncovered';

export interface AuditIssue {
  readonly kind: AuditIssueKind;
  /** Chain of the entry; undefined for checkpoint issues. */
  readonly chain?: number;
  /** Entry sequence (position), or checkpoint sequence for checkpoint issues. */
  readonly sequence?: number;
  readonly detail: string;
}

export interface AuditVerificationReport {
  readonly intact: boolean;
  readonly chains: number;
  readonly entries: number;
  readonly checkpoints: number;
  /** Sequence of the last checkpoint whose signature verified, if any. */
  readonly lastCheckpoint?: number;
  /** Entries appended after the last valid checkpoint: covered by the chain links only. */
  readonly entriesAfterLastCheckpoint: number;
  /** Anchored checkpoints read from outside the table (undefined when none were given). */
  readonly anchors?: number;
  /** Sequence of the last anchored checkpoint whose signature verified. */
  readonly lastAnchored?: number;
  readonly issues: readonly AuditIssue[];
}
