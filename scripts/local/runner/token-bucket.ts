/** Token bucket: `rate` tokens per second, at most `burst` saved up (API Gateway throttling semantics). */
export class TokenBucket {
  private tokens: number;
  private last = Date.now();

  public constructor(
    private readonly rate: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }

  public take(): boolean {
    const now = Date.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.rate);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
