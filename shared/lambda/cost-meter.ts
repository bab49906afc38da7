import { AsyncLocalStorage } from 'node:async_hooks';
import type { CostRecorder, JobCost } from '../core/metrics';

/**
 * Attributes the platform's AWS requests to the job being handled. The worker runs each SQS
 * record inside {@link measure}; the SDK clients' cost middleware (shared/aws/cost-middleware.ts)
 * reports every request to {@link record}, which adds it to the tally of the record whose async
 * context made it (records of one batch run concurrently, each with its own tally). Requests made
 * outside a measured scope (e.g. at start-up) are not counted.
 *
 * @example
 * const meter = new CostMeter();
 * const clients = createAwsClients({ cost: meter });
 * await meter.measure(async () => { await store.get(id); return meter.current(); }); // { requests: 1, writeUnits: 0 }
 */
export class CostMeter implements CostRecorder {
  private readonly scope = new AsyncLocalStorage<JobCost>();

  /** Runs `fn` with a fresh tally; returns its result and what was spent inside it. */
  async measure<T>(fn: () => Promise<T>): Promise<{ value: T; cost: JobCost }> {
    const tally: JobCost = { requests: 0, writeUnits: 0 };
    const value = await this.scope.run(tally, fn);
    return { value, cost: { ...tally } };
  }

  /** What the current scope spent so far (zero outside a scope). */
  current(): JobCost {
    const tally = this.scope.getStore();
    return tally ? { ...tally } : { requests: 0, writeUnits: 0 };
  }

  record(cost: JobCost): void {
    const tally = this.scope.getStore();
    if (!tally) return;
    tally.requests += cost.requests;
    tally.writeUnits += cost.writeUnits;
  }
}
