/**
 * A small platform on in-memory ports for the dependency tests: the enqueue service, the
 * control service and one worker, all on one FakeJobStore with its FakeJobGraph; `drain`
 * delivers every message sent (in order, as SQS may) until none is left.
 */
import { z } from 'zod';
import { BatchService } from '../../shared/api/batch-service';
import { ControlService } from '../../shared/api/control-service';
import { FlowsService } from '../../shared/api/flows-service';
import { JobsService } from '../../shared/api/jobs-service';
import { ManualClock } from '../../shared/core/clock';
import type { EnqueueRequest } from '../../shared/core/enqueue';
import { defineJobType } from '../../shared/core/job-type';
import type { JobState } from '../../shared/core/states';
import { PermanentError } from '../../shared/errors';
import { createLogger } from '../../shared/logger';
import { createWorker } from '../../shared/runtime/worker';
import { FakeJobControl } from '../support/control-fakes';
import { captureLogs, FakeJobQueue, FakeJobScheduler, FakeJobStore, sqsRecord, testConfig } from '../support/fakes';
import { FakeJobGraph } from '../support/graph-fakes';

export const T0 = Date.parse('2026-03-01T12:00:00.000Z');

/** `node`: payload `{ fail?: boolean }`; returns `{ ran: <id> }`, or fails for good when `fail`. */
export const nodeSpec = defineJobType({
  type: 'node',
  payload: z.object({ fail: z.boolean().optional() }),
  timeoutMs: 5000,
  retry: { maxAttempts: 1, backoff: { kind: 'constant', delayMs: 1000 } },
});

export type ParentsSeen = Record<string, { state: JobState; result: unknown }>;

export function depsPlatform() {
  const store = new FakeJobStore();
  const graph = new FakeJobGraph(store);
  const queue = new FakeJobQueue();
  const scheduler = new FakeJobScheduler();
  const clock = new ManualClock(T0);
  const logs = captureLogs();
  const log = createLogger({ level: 'debug', sink: logs.sink });
  const config = testConfig(['node']);
  /** Job ids in the order their handler ran. */
  const runs: string[] = [];
  /** What each handler saw of its parents (`ctx.parents()`). */
  const parentsSeen = new Map<string, ParentsSeen>();
  const worker = createWorker(
    {
      spec: nodeSpec,
      run: async (payload, ctx) => {
        runs.push(ctx.jobId);
        parentsSeen.set(ctx.jobId, await ctx.parents());
        clock.advance(10);
        if ((payload as { fail?: boolean }).fail) throw new PermanentError(`${ctx.jobId} fails`);
        return { ran: ctx.jobId };
      },
    },
    { config, store, queue, scheduler, clock, graph, owner: 'w', logger: log },
  );
  const jobs = new JobsService({ config, catalog: [nodeSpec], store, queue, scheduler, clock, log, graph });
  const control = new ControlService({
    config,
    catalog: [nodeSpec],
    store,
    control: new FakeJobControl(store),
    queue,
    scheduler,
    clock,
    log,
    graph,
  });
  const batch = new BatchService({ jobs, log });
  const flows = new FlowsService({ jobs, graph, clock, log, retentionDays: 30 });
  let delivered = 0;
  /** Outcomes of every delivery, by job id. */
  const deliveries: { id: string; retry: boolean }[] = [];

  /**
   * Delivers every message sent so far and since, until none is new; a message kept comes back
   * once. Stops when every pending message has come back kept, over and over, with nothing else
   * done in between: a job not due yet (the clock does not move while it drains) would otherwise
   * come back until the limit, seconds of busy looping.
   */
  async function drain(limit = 100_000): Promise<void> {
    let keptInARow = 0;
    for (let n = 0; delivered < queue.sent.length && n < limit; n++) {
      const sent = queue.sent[delivered++];
      if (!sent) break;
      const record = sqsRecord(sent.message, { messageId: `m${delivered}` });
      const out = await worker({ Records: [record] });
      const retry = out.batchItemFailures.length > 0;
      deliveries.push({ id: sent.message.id, retry });
      if (!retry) {
        keptInARow = 0;
        continue;
      }
      queue.sent.push({ ...sent });
      keptInARow += 1;
      if (keptInARow > 2 * (queue.sent.length - delivered) + 10) break;
    }
  }

  const enqueue = (id: string, dependsOn?: EnqueueRequest['dependsOn'], fail = false) =>
    jobs.enqueue({ type: 'node', id, payload: fail ? { fail } : {}, ...(dependsOn ? { dependsOn } : {}) });

  return {
    config,
    store,
    graph,
    queue,
    scheduler,
    clock,
    logs: logs.lines,
    jobs,
    batch,
    flows,
    control,
    runs,
    parentsSeen,
    drain,
    deliveries,
    enqueue,
    worker,
  };
}
