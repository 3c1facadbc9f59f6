/**
 * A fixed set of PKCS#11 sessions handed out one caller at a time: a session runs one operation at a
 * time, so concurrency comes from several sessions. Waiters are served first come, first served.
 */
export class SessionPool {
  private readonly idle: Buffer[] = [];
  private readonly waiters: Array<(session: Buffer) => void> = [];

  public constructor(sessions: Buffer[]) {
    this.idle.push(...sessions);
  }

  public acquire(): Promise<Buffer> {
    const session = this.idle.pop();
    if (session) return Promise.resolve(session);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  public release(session: Buffer): void {
    const waiter = this.waiters.shift();
    if (waiter) waiter(session);
    else this.idle.push(session);
  }
}
