/**
 * Jobs per second on local AWS: N queued no-op jobs (items written through the job store,
 * messages sent with SendMessageBatch) drained by 1, 4 or 16 emulated event source mapping
 * pollers running the real worker. The clock runs from starting the pollers until the last
 * job's success write has returned; then the table is checked (every job `succeeded`).
 * It measures our code plus DynamoDB Local and fauxqs sharing this machine's cores.
 */

import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { type AttributeValue, BatchGetItemCommand } from '@aws-sdk/client-dynamodb';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { keyOf } from '../shared/aws/attributes';
import type { JobStore } from '../shared/core/ports';
import { keys } from '../shared/core/table';
import { createLogger } from '../shared/logger';
import type { JobDefinition } from '../shared/runtime/job-definition';
import { type LocalAws, localClients, startQueueRunner, uniquePrefix } from '../test/local-aws/index';
import { startLocalPlatform } from '../test/local-aws/local-platform';
import { noop, queuedJob } from './fixtures';

export interface ThroughputRun {
  /** Concurrent pollers, each running one batch (≤ 10 jobs) at a time. */
  concurrency: number;
  jobs: number;
  seconds: number;
  jobsPerSecond: number;
  /** Worker invocations (batches) it took. */
  invocations: number;
  /** Jobs found `succeeded` in the table afterwards. */
  verified: number;
  /** Job items written per second while loading the backlog (PutItem, 32 in flight). */
  loadItemsPerSecond: number;
  /** CPU cores used while draining, on average: this Node process, and the DynamoDB Local JVM. */
  cores: { node: number; dynamodbLocal: number | null };
}

/** CPU seconds a process has used (Linux /proc; utime + stime at 100 ticks/s), or null. */
function processCpuSeconds(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

/** Passes every call through (a Proxy, so new store methods pass untouched) and resolves `done` at `target` successes. */
function countSuccesses(store: JobStore, target: number, done: () => void): JobStore {
  let succeeded = 0;
  return new Proxy(store, {
    get(inner, property, receiver) {
      if (property === 'succeed') {
        return async (input: Parameters<JobStore['succeed']>[0]) => {
          await inner.succeed(input);
          succeeded += 1;
          if (succeeded === target) done();
        };
      }
      const value = Reflect.get(inner, property, receiver);
      return typeof value === 'function' ? value.bind(inner) : value;
    },
  });
}

async function inParallel<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await work(item);
    }
  });
  await Promise.all(lanes);
}

async function run(aws: LocalAws, jobs: number, concurrency: number, jvmPid?: number): Promise<ThroughputRun> {
  let finish: () => void = () => {};
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const prefix = uniquePrefix(`bench-tp${concurrency}`);
  const platform = await startLocalPlatform({
    aws,
    prefix,
    jobs: [noop as unknown as JobDefinition],
    runWorkers: false,
    logger: createLogger({ level: 'warn' }),
    wrapStore: (store) => countSuccesses(store, jobs, finish),
  });
  const harness = localClients(aws);
  const runners: ReturnType<typeof startQueueRunner>[] = [];
  const stopRunners = async () => {
    const running = runners.splice(0);
    await Promise.all(running.map((runner) => runner.stop()));
    return running;
  };
  try {
    const queues = platform.deployment.queues.noop;
    const worker = platform.workers.noop;
    if (!queues || !worker) throw new Error('noop was not deployed');
    const ids = Array.from({ length: jobs }, (_, i) => `${prefix}-${i}`);
    const loadStart = performance.now();
    const now = Date.now();
    await inParallel(ids, 32, async (id) => {
      const out = await platform.store.create(queuedJob(id, now));
      if (!out.created) throw new Error(`job ${id} existed`);
    });
    const loadItemsPerSecond = jobs / ((performance.now() - loadStart) / 1000);
    const chunks = Array.from({ length: Math.ceil(jobs / 10) }, (_, i) => ids.slice(i * 10, i * 10 + 10));
    await inParallel(chunks, 8, async (chunk) => {
      const out = await harness.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queues.url,
          Entries: chunk.map((id, n) => ({ Id: String(n), MessageBody: JSON.stringify({ v: 1, id, type: 'noop' }) })),
        }),
      );
      if ((out.Failed ?? []).length > 0) throw new Error(`SendMessageBatch failed: ${JSON.stringify(out.Failed)}`);
    });

    const started = performance.now();
    const nodeCpu = process.cpuUsage();
    const jvmCpu = processCpuSeconds(jvmPid);
    for (let i = 0; i < concurrency; i++) {
      runners.push(
        startQueueRunner({
          queueUrl: queues.url,
          queueArn: queues.arn,
          handler: worker,
          functionName: `${prefix}-noop-${i}`,
          batchSize: 10,
          maxConcurrency: 1,
          waitTimeSeconds: 1,
        }),
      );
    }
    const timeoutMs = Math.max(60_000, jobs * 20);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      finished,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${jobs} jobs not done within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]).finally(() => clearTimeout(timer));
    const seconds = (performance.now() - started) / 1000;
    const nodeUsed = process.cpuUsage(nodeCpu);
    const jvmNow = processCpuSeconds(jvmPid);
    const cores = {
      node: (nodeUsed.user + nodeUsed.system) / 1e6 / seconds,
      dynamodbLocal: jvmCpu === null || jvmNow === null ? null : (jvmNow - jvmCpu) / seconds,
    };
    const stopped = await stopRunners();
    const errors = stopped.flatMap((runner) => runner.stats.errors);
    if (errors.length > 0) throw new Error(`runners reported errors: ${String(errors[0])}`);

    // Read back every job's state (succeeded is not indexed: only rare states are).
    let verified = 0;
    for (let i = 0; i < ids.length; i += 100) {
      let pending: Record<string, AttributeValue>[] = ids.slice(i, i + 100).map((id) => keyOf(keys.job(id)));
      for (let round = 0; pending.length > 0 && round < 10; round++) {
        const out = await harness.dynamo.send(
          new BatchGetItemCommand({
            RequestItems: {
              [platform.config.tableName]: {
                Keys: pending,
                ProjectionExpression: '#s',
                ExpressionAttributeNames: { '#s': 'state' },
                ConsistentRead: true,
              },
            },
          }),
        );
        verified += (out.Responses?.[platform.config.tableName] ?? []).filter(
          (item) => item.state?.S === 'succeeded',
        ).length;
        pending = out.UnprocessedKeys?.[platform.config.tableName]?.Keys ?? [];
      }
    }
    if (verified !== jobs) throw new Error(`${verified} of ${jobs} jobs are succeeded in the table`);
    const invocations = stopped.reduce((sum, runner) => sum + runner.stats.invocations, 0);
    return {
      concurrency,
      jobs,
      seconds,
      jobsPerSecond: jobs / seconds,
      invocations,
      verified,
      loadItemsPerSecond,
      cores,
    };
  } finally {
    await stopRunners();
    harness.destroy();
    await platform.stop();
  }
}

/**
 * One backlog of `jobs` jobs per concurrency level, each in its own table and queue, after an
 * untimed warm-up backlog (JIT of DynamoDB Local and of this process).
 */
export async function measureThroughput(
  aws: LocalAws,
  jobs: number,
  levels: number[],
  jvmPid?: number,
): Promise<ThroughputRun[]> {
  aws.applyEnv();
  await run(aws, Math.min(jobs, 200), 4);
  const runs: ThroughputRun[] = [];
  for (const concurrency of levels) runs.push(await run(aws, jobs, concurrency, jvmPid));
  return runs;
}
