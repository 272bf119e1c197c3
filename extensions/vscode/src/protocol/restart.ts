/**
 * When to restart a crashed server: at most `limit` crashes inside a sliding window, so a
 * server that dies at start-up is not restarted forever, while one crash a day always is.
 */

export class RestartPolicy {
  private crashes: number[] = [];

  constructor(
    readonly limit = 5,
    readonly windowMs = 3 * 60 * 1000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Record a crash; true if the server should be restarted. */
  crashed(): boolean {
    const t = this.now();
    this.crashes = this.crashes.filter((c) => t - c < this.windowMs);
    this.crashes.push(t);
    return this.crashes.length <= this.limit;
  }

  get recent(): number {
    return this.crashes.length;
  }

  reset(): void {
    this.crashes = [];
  }
}
