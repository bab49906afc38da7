/**
 * Batch handlers against single jobs on local AWS, in one run: the same number of jobs of a type
 * with a batch handler (`batch: { maxSize: 10 }`, `defineBatchJob`) and of a plain type, each
 * enqueued in batches of 100 and run by the deployed defaults' runners (batches of up to 10
 * messages, so a worker invocation gets up to 10 jobs either way). Reported per 1,000 jobs: handler
 * calls, AWS requests and DynamoDB write units; and the wall time until every job succeeded.
 *
 * What a batch handler saves is the handler's own work: one call for up to `maxSize` jobs (a bulk
 * API call, one database round trip). Orrery's own requests and write units per job are the same
 * as a single job's: each job keeps its own claim, lease, status and result.
 */
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { defineJobType } from '../shared/core/job-type';
import { createLogger } from '../shared/logger';
import { defineBatchJob } from '../shared/runtime/define-batch-job';
import { defineJob } from '../shared/runtime/define-job';
import type { JobDefinition } from '../shared/runtime/job-definition';
import type { LocalAws } from '../test/local-aws/index';
import { startLocalPlatform } from '../test/local-aws/local-platform';
import { uniquePrefix } from '../test/local-aws/namespace';
import { CallRecorder, countedClients } from './counting-middleware';
import { until } from './scenario';

/** Jobs per handler call of the batch type (its event source mapping's batch size). */
const MAX_SIZE = 10;
const ENQUEUE_BATCH = 100;

const payload = z.object({ i: z.int() });
const batchSpec = defineJobType({
  type: 'bench-batched',
  payload,
  timeoutMs: 30_000,
  batch: { maxSize: MAX_SIZE, maxWaitSeconds: 1 },
});
const singleSpec = defineJobType({ type: 'bench-single', payload, timeoutMs: 30_000 });

export interface BatchRun {
  row: 'batch handler' | 'single jobs';
  jobs: number;
  /** Per 1,000 jobs. */
  handlerCalls: number;
  requests: number;
  writeUnits: number;
  /** From the first enqueue to the last job's end. */
  seconds: number;
}

export interface BatchHandlersBench {
  maxSize: number;
  batch: BatchRun;
  single: BatchRun;
}

export async function measureBatchHandlers(aws: LocalAws, jobs: number): Promise<BatchHandlersBench> {
  const ended = new Set<number>();
  const calls = { batch: 0, single: 0 };
  const batchDef = defineBatchJob(batchSpec, async (items) => {
    calls.batch += 1;
    for (const item of items) ended.add(item.payload.i);
    return items.map(() => ({ ok: true as const, result: { ok: true } }));
  });
  const singleDef = defineJob(singleSpec, async (p) => {
    calls.single += 1;
    ended.add(p.i);
    return { ok: true };
  });
  const recorder = new CallRecorder();
  aws.applyEnv();
  const platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('bench-batch'),
    clients: countedClients(recorder),
    jobs: [batchDef as unknown as JobDefinition, singleDef as unknown as JobDefinition],
    logger: createLogger({ level: 'error' }),
    runner: { batchSize: MAX_SIZE, maxConcurrency: 5, waitTimeSeconds: 1 },
  });
  const run = async (row: BatchRun['row'], type: string, from: number, count = jobs): Promise<BatchRun> => {
    const ids = Array.from({ length: count }, (_, n) => from + n);
    const callsBefore = row === 'batch handler' ? calls.batch : calls.single;
    const mark = recorder.mark();
    const first = performance.now();
    for (let n = 0; n < ids.length; n += ENQUEUE_BATCH) {
      const part = ids.slice(n, n + ENQUEUE_BATCH);
      const response = await fetch(`${platform.url}/jobs/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jobs: part.map((i) => ({ type, payload: { i } })) }),
      });
      if (response.status >= 300) throw new Error(`batch-handlers bench: batch answered ${response.status}`);
    }
    await until('batch-handlers', () => ids.every((i) => ended.has(i)), 600_000, `every ${row} job to end`);
    // the last outcomes' writes land after their handlers returned
    await new Promise((r) => setTimeout(r, 1_000));
    const seconds = (performance.now() - first) / 1000;
    const made = recorder.since(mark);
    const per1000 = (n: number) => Math.round((n / count) * 1000 * 10) / 10;
    return {
      row,
      jobs: count,
      handlerCalls: per1000((row === 'batch handler' ? calls.batch : calls.single) - callsBefore),
      requests: per1000(made.length),
      writeUnits: per1000(made.reduce((sum, c) => sum + (c.capacity?.kind === 'write' ? c.capacity.total : 0), 0)),
      seconds,
    };
  };
  try {
    // connections, JIT, the queues' first receives: not counted
    await run('batch handler', batchSpec.type, 2_000_000, 20);
    await run('single jobs', singleSpec.type, 3_000_000, 20);
    const batch = await run('batch handler', batchSpec.type, 0);
    const single = await run('single jobs', singleSpec.type, 1_000_000);
    return { maxSize: MAX_SIZE, batch, single };
  } finally {
    await platform.stop();
  }
}
