/**
 * The audit events of one attempt (ids and hashes only), held until the attempt appends them in one batch:
 * before its result is stored when it signed, best effort when it fails.
 */
import type { AuditEvent, AuditReceipt, AuditSink } from '../audit';

export class AuditBuffer {
  private readonly events: AuditEvent[] = [];
  private signatureReceipt: AuditReceipt | undefined;

  /** Without a sink (no audit log configured) the events are dropped on append. */
  public constructor(private readonly sink: AuditSink | undefined) {}

  public push(event: AuditEvent): void {
    this.events.push(event);
  }

  /** Events recorded and not yet appended. */
  public get pending(): number {
    return this.events.length;
  }

  /** Where the signature's event landed in the log (returned with the result), once appended. */
  public get receipt(): AuditReceipt | undefined {
    return this.signatureReceipt;
  }

  /** Appends what is pending in one batch; the buffer is empty afterwards even when the append fails. */
  public async append(): Promise<void> {
    const batch = this.events.splice(0);
    if (batch.length === 0 || !this.sink) return;
    const receipts = await this.sink.appendMany(batch);
    const signature = batch.findIndex((e) => e.type === 'signature.made');
    if (signature >= 0) this.signatureReceipt = receipts[signature];
  }
}
