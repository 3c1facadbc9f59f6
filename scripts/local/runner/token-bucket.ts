/** Token bucket: `rate` tokens per second, at most `burst` saved up (API Gateway throttling semantics). */
export class TokenBucket {
  private tokens: number;
  private last: number;

  public constructor(
    private readonly rate: number,
    private readonly burst: number,
    private readonly clock: () => number = Date.now,
  ) {
    this.tokens = burst;
    this.last = clock();
  }

  /** Whether a token is there now (takes none). */
  public ready(): boolean {
    this.refill();
    return this.tokens >= 1;
  }

  public take(): boolean {
    if (!this.ready()) return false;
    this.tokens -= 1;
    return true;
  }

  /** Whole seconds until the next token, at least 1 (a Retry-After). */
  public secondsToNextToken(): number {
    this.refill();
    return Math.max(1, Math.ceil((1 - this.tokens) / this.rate));
  }

  private refill(): void {
    const now = this.clock();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.rate);
    this.last = now;
  }
}
