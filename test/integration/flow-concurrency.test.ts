/**
 * Concurrency limits on local AWS (DynamoDB Local, fauxqs) through the real SDK: 1,000 jobs over
 * 10 keys with a limit of 2 per key, random durations, and workers killed mid-job (their process
 * dies: no result, no more AWS calls; the job's lease expires and its next delivery takes over).
 *
 * What must hold, measured from every handler execution (start and end times, a killed one
 * ending when its worker died):
 * - at no moment do more than 2 handlers of one key run;
 * - every job succeeds;
 * - afterwards every key shows no holder and nothing waiting: no slot leaked.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type AwsClients, createAwsClients } from '../../shared/aws/clients';
import { DynamoFlowSlots } from '../../shared/aws/dynamo-flow-slots';
import { DynamoJobStore } from '../../shared/aws/dynamo-job-store';
import { SqsJobQueue } from '../../shared/aws/sqs-job-queue';
import { createLogger } from '../../shared/logger';
import { createWorker } from '../../shared/runtime/worker';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { type QueueRunner, type SqsLambdaHandler, startQueueRunner } from '../local-aws/lambda-runner';
import { startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';
import { crashable, DeadZones, FaultInjector } from '../support/faults';
import { maxOverlap } from '../support/held-handlers';
import { untilSucceeded } from '../support/local-api';
import { type ProbePayload, ProbeTracker, probeJob } from '../support/probes';

const JOBS = 1000;
const KEYS = 10;
const LIMIT = 2;

let aws: LocalAws;
beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
});
afterAll(async () => {
  await aws?.stop();
});

describe('concurrency limits on local AWS', () => {
  it(`never runs more than ${LIMIT} jobs of a key, finishes all ${JOBS} with killed workers, and leaks no slot`, async () => {
    const tracker = new ProbeTracker();
    const deadZones = new DeadZones();
    // No faults: it only makes the AWS calls of a killed worker hang, as a dead process's would.
    const zoned = new FaultInjector({ deadZones });
    const def = probeJob({
      type: 'tenant-probe',
      tracker,
      deadZones,
      timeoutMs: 2000,
      maxAttempts: 5,
      backoff: { kind: 'constant', delayMs: 200 },
      concurrency: [{ limit: LIMIT, key: (p: ProbePayload) => p.tag ?? 'none' }],
    });
    const logger = createLogger({ level: 'error' });
    aws.applyEnv();
    const owned: AwsClients[] = [];
    const platform = await startLocalPlatform({
      aws,
      prefix: uniquePrefix('flow'),
      jobs: [def],
      leaseMs: 3000,
      visibilityTimeoutSeconds: 5,
      runWorkers: false,
      logger,
    });
    const runners: QueueRunner[] = [];
    try {
      const queues = platform.deployment.queues['tenant-probe'];
      if (!queues) throw new Error('no queues');
      let killed = 0;
      // Two event source mappings, each with 4 "Lambda containers" of their own clients and worker.
      for (let r = 0; r < 2; r++) {
        const free: SqsLambdaHandler[] = [];
        for (let c = 0; c < 4; c++) {
          const clients = createAwsClients();
          zoned.install(clients.dynamo, 'dynamodb');
          zoned.install(clients.sqs, 'sqs');
          owned.push(clients);
          const worker = createWorker(def, {
            config: platform.config,
            store: new DynamoJobStore(clients.dynamo, platform.config.tableName),
            queue: new SqsJobQueue(clients.sqs),
            flow: new DynamoFlowSlots(clients.dynamo, platform.config.tableName),
            leaseMs: 3000,
            logger,
            owner: `w${r}-${c}`,
          });
          free.push(crashable(worker, deadZones, () => (killed += 1)));
        }
        runners.push(
          startQueueRunner({
            queueUrl: queues.url,
            queueArn: queues.arn,
            functionName: `tenant-probe-${r}`,
            batchSize: 10,
            maxConcurrency: 4,
            waitTimeSeconds: 1,
            timeoutMs: 32_000,
            handler: async (event, context) => {
              const container = free.pop();
              if (!container) throw new Error('no free container');
              try {
                return await container(event, context);
              } finally {
                free.push(container);
              }
            },
          }),
        );
      }

      // Enqueue through the API: 100 jobs per key, random durations, 3% killed on their first attempt.
      let seed = 42;
      const random = () => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return seed / 2 ** 31;
      };
      const ids: string[] = [];
      const keyOf = new Map<string, string>();
      const plans = Array.from({ length: JOBS }, (_, i) => {
        const id = `fc-${i}`;
        const tag = `tenant-${i % KEYS}`;
        ids.push(id);
        keyOf.set(id, tag);
        const payload: ProbePayload = { tag, sleepMs: Math.floor(random() * 150) };
        if (random() < 0.03) {
          payload.killOnAttempts = [1];
          payload.killAfterMs = Math.floor(random() * 100);
        }
        return { id, payload };
      });
      for (let i = 0; i < plans.length; i += 25) {
        await Promise.all(
          plans.slice(i, i + 25).map(async ({ id, payload }) => {
            const response = await fetch(`${platform.url}/jobs`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ id, type: 'tenant-probe', payload }),
            });
            const body = await response.text();
            expect(response.status, body).toBe(201);
          }),
        );
      }

      // Wait until every job has finished.
      const open = await untilSucceeded(platform.store, ids, 150_000);
      expect(open, 'jobs not succeeded').toBe(0);

      // At no moment more than LIMIT handlers of one key.
      const byKey = new Map<string, { start: number; end: number }[]>();
      for (const [id, trace] of tracker.jobs) {
        const key = keyOf.get(id) ?? '?';
        for (const e of trace.executions) {
          const list = byKey.get(key) ?? [];
          list.push({ start: e.startedAt, end: e.endedAt ?? Number.POSITIVE_INFINITY });
          byKey.set(key, list);
        }
      }
      const overlaps = Object.fromEntries([...byKey].map(([key, list]) => [key, maxOverlap(list)]));
      expect(Object.keys(overlaps)).toHaveLength(KEYS);
      for (const [key, max] of Object.entries(overlaps)) {
        expect(max, `key ${key}`).toBeLessThanOrEqual(LIMIT);
      }
      // The limit was reached (the check above is not vacuous), and workers were killed.
      expect(Math.max(...Object.values(overlaps))).toBe(LIMIT);
      expect(killed).toBeGreaterThan(0);
      expect([...tracker.jobs.values()].some((t) => t.executions.some((e) => e.end === 'killed'))).toBe(true);

      // No slot leaked: every key shows nobody holding and nobody waiting.
      const slots = new DynamoFlowSlots(platform.clients.dynamo, platform.config.tableName);
      for (let k = 0; k < KEYS; k++) {
        const state = await slots.state({ scope: 'tenant-probe#0', key: `tenant-${k}` });
        expect(state, `tenant-${k}`).toMatchObject({ holders: [], waiting: 0 });
        // many jobs had to wait: the line was used
        expect(state.issued, `tenant-${k} tickets`).toBeGreaterThan(0);
      }
    } finally {
      await Promise.all(runners.map((r) => r.stop()));
      await platform.stop();
      for (const c of owned) {
        c.dynamo.destroy();
        c.sqs.destroy();
        c.scheduler.destroy();
      }
    }
  }, 240_000);
});
