/**
 * The paths the bench sends jobs down, each as the API calls that start it (made as the `api`
 * actor; preparation as `setup`, which is not counted) and the state its jobs must reach.
 */
import { performance } from 'node:perf_hooks';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { DynamoFlowSlots } from '../shared/aws/dynamo-flow-slots';
import { DynamoPacer } from '../shared/aws/dynamo-pacer';
import { type Slot, WHOLE_TYPE_KEY } from '../shared/core/flow';
import type { Job, JobView } from '../shared/core/job';
import { paceScope, throttlePace } from '../shared/core/pace';
import type { JobState } from '../shared/core/states';
import { newJob } from '../test/support/fakes';
import { asActor } from './counting-middleware';
import { functionUrlEvent, pacedRankedJob, payloadOfBytes, responseJson } from './fixtures';
import type { Harness } from './harness';

/** What starting a trace did. */
export interface Started {
  /** Jobs to follow (more may be discovered: jobs the worker creates from a recurring fire). */
  ids: string[];
  /** Jobs (or fires, cancels) the trace counts as. */
  jobs: number;
  apiInvocations: number;
  apiMs: number;
  schedulerInvocations: number;
}

export interface PathPlan {
  id: string;
  label: string;
  /** Once per path, before anything is counted. */
  setup?: (h: Harness) => Promise<void>;
  start: (h: Harness, i: number) => Promise<Started>;
  /** @default 'succeeded' */
  until?: JobState;
  /** Job type whose queue the trace's jobs go through. @default 'echo' */
  type?: string;
  /** Job types whose queues the trace's jobs go through (a job and those it starts). @default [type] */
  types?: string[];
  /** Long-poll wait per receive: covers SQS delays and retry backoff, which run in real time. */
  waitSeconds: number;
  /** Event source mapping batch size. @default 1 */
  batchSize?: number;
  /** Follow jobs the worker creates. */
  discover?: boolean;
  /** Traces to run: one per job unless given. */
  traces?: number;
  /** Follow the job's status item: its writes' units, and its size read back after each step. */
  statusItem?: boolean;
  /**
   * Called before each delivery with the trace's jobs as stored now: what a caller does meanwhile
   * (e.g. send a signal once the job waits for it). Returns the API invocations it made.
   */
  during?: (h: Harness, jobs: (Job | undefined)[]) => Promise<number>;
}

/** Jobs in one `POST /jobs:batch` of the batch path. */
export const BATCH_JOBS = 100;

/** The route (or the whole feature) is not there: report the path as not implemented. */
export class NotImplemented extends Error {}

const MISSING = new Set(['route_not_found', 'method_not_allowed', 'not_configured']);

/** Calls the API handler as the Function URL would; throws {@link NotImplemented} for a missing route. */
export async function call(h: Harness, actor: string, method: string, path: string, body?: unknown) {
  const started = performance.now();
  const response = await asActor(actor, () => h.platform.api(functionUrlEvent(method, path, body)));
  const ms = performance.now() - started;
  const status = response.statusCode ?? 0;
  if (status >= 400) {
    const code = responseJson<{ error?: { code?: string } }>(response).error?.code ?? '';
    if (MISSING.has(code)) throw new NotImplemented(`${method} ${path} answers ${status} ${code}`);
    throw new Error(`${method} ${path} answered ${status}: ${response.body}`);
  }
  return { response, ms };
}

async function enqueue(h: Harness, body: Record<string, unknown>): Promise<Started> {
  const { response, ms } = await call(h, 'api', 'POST', '/jobs', body);
  const job = responseJson<JobView>(response);
  return { ids: [job.id], jobs: 1, apiInvocations: 1, apiMs: ms, schedulerInvocations: 0 };
}

/** Moves the clock to the first schedule of the platform's group (matching `pick`) due, and fires it. */
async function fireNext(h: Harness, pick: (expression: string) => boolean): Promise<number> {
  const group = h.platform.config.scheduleGroup;
  const due = h.aws.scheduler
    .list()
    .filter((s) => s.GroupName === group && pick(s.ScheduleExpression))
    .map((s) => s.nextFireAt ?? Number.POSITIVE_INFINITY);
  const next = Math.min(...due);
  if (!Number.isFinite(next)) throw new Error('no schedule is due to fire');
  h.clock.advanceTo(next);
  return h.aws.scheduler.fireDue();
}

/**
 * The slot a trace's stand-in holds: its tenant's (a limit of 1 per tenant), or, for `fair`, the
 * type's one place, shared fairly, held by another tenant (the waiting job joins its own
 * tenant's line, and the hand-on picks that tenant).
 */
function heldSlot(type: 'lined' | 'ranked' | 'fair', i: number): Slot {
  if (type !== 'fair') return { scope: `${type}#0`, key: `bench-${i}`, limit: 1 };
  return { scope: 'fair#0', key: WHOLE_TYPE_KEY, limit: 1, fair: { key: 'bench-holder', weightOf: () => 1 } };
}

/**
 * A job that has to wait for its slot (limit 1), then runs. Each trace's slot is held by a
 * stand-in job (`setup`, not counted: a running job item and its slot) while the job arrives,
 * so the job waits; once it waits, the stand-in gives the slot back (`setup`) and the hand-on is
 * made as the worker would after its job's release (`worker`, counted): the trace counts the
 * job's own path, its wait, and the admission that ends it.
 */
function waitPath(id: string, type: 'lined' | 'ranked' | 'fair', label: string): PathPlan {
  const slotOf = (i: number) => heldSlot(type, i);
  const holderOf = (i: number) => `bench-holder-${type}-${i}`;
  const handedOn = new Set<string>();
  return {
    id,
    label,
    start: async (h, i) => {
      const slots = new DynamoFlowSlots(h.platform.clients.dynamo, h.platform.config.tableName);
      const now = h.clock.now();
      await asActor('setup', async () => {
        // a live holder: the waiting job's look at the holders leaves it be
        const holder = newJob(
          { id: holderOf(i), type, state: 'running', attempts: 1, leaseToken: 1, leaseExpiresAt: now + 3600_000 },
          now,
        );
        await h.platform.store.create(holder);
        await slots.acquire({ slot: slotOf(i), jobId: holderOf(i), type, now, token: 1 });
      });
      return enqueue(h, { type, payload: { tenant: `bench-${i}`, i } });
    },
    during: async (h, jobs) => {
      const slots = new DynamoFlowSlots(h.platform.clients.dynamo, h.platform.config.tableName);
      for (const job of jobs) {
        if (!job?.waitingFor || handedOn.has(job.id)) continue;
        handedOn.add(job.id);
        const i = (job.payload as { i: number }).i;
        const slot = slotOf(i);
        await asActor('setup', () => slots.release({ slot, jobId: holderOf(i) }));
        const admitted = await asActor('worker', () => slots.admit({ slot, now: h.clock.now() }));
        for (const a of admitted) {
          await asActor('worker', () =>
            h.platform.clients.sqs.send(
              new SendMessageCommand({
                QueueUrl: h.platform.config.routes[type]?.queueUrl,
                MessageBody: JSON.stringify({ v: 1, id: a.jobId, type }),
              }),
            ),
          );
        }
      }
      return 0;
    },
    type,
    waitSeconds: 1,
  };
}

const twoHoursAhead = (h: Harness) => new Date(h.clock.now() + 2 * 3600_000).toISOString();
const CRON = 'bench-cron';

export const PLANS: PathPlan[] = [
  {
    id: 'immediate',
    label: 'Immediate job, succeeds',
    start: (h, i) => enqueue(h, { type: 'echo', payload: { hello: 'world', i } }),
    waitSeconds: 1,
    statusItem: true,
  },
  {
    id: 'payload-10k',
    label: 'Immediate job with a 10 KB payload, succeeds',
    start: (h, i) => enqueue(h, { type: 'echo', payload: payloadOfBytes(10_000, i) }),
    waitSeconds: 1,
  },
  {
    id: 'payload-10k-once',
    label: 'Immediate job with a 10 KB payload and a small result (sink), succeeds',
    start: (h, i) => enqueue(h, { type: 'sink', payload: payloadOfBytes(10_000, i) }),
    type: 'sink',
    waitSeconds: 1,
    statusItem: true,
  },
  {
    id: 'payload-1m-inline',
    label: 'Immediate job with a 1 MB payload sent inline (kept in the payload bucket), small result (sink), succeeds',
    start: (h, i) => enqueue(h, { type: 'sink', payload: payloadOfBytes(1_000_000, i) }),
    type: 'sink',
    waitSeconds: 1,
    statusItem: true,
  },
  {
    id: 'payload-1m-upload',
    label:
      'Immediate job with a 1 MB payload uploaded (POST /uploads, PUT, enqueue by payloadRef), small result, succeeds',
    start: async (h, i) => {
      const upload = await call(h, 'api', 'POST', '/uploads');
      const { url, ref } = responseJson<{ url: string; ref: string }>(upload.response);
      // the client's PUT goes to S3 with the presigned URL: no function makes it (1 S3 PUT, billed to the bucket)
      const put = await fetch(url, { method: 'PUT', body: JSON.stringify(payloadOfBytes(1_000_000, i)) });
      if (!put.ok) throw new Error(`the upload's PUT answered ${put.status}`);
      const started = await enqueue(h, { type: 'sink', payloadRef: ref });
      return { ...started, apiInvocations: 2, apiMs: started.apiMs + upload.ms };
    },
    type: 'sink',
    waitSeconds: 1,
  },
  {
    id: 'concurrency-free',
    label: 'Immediate job with a concurrency limit (2 per tenant), slot free, succeeds',
    // One key for every trace, its slot item created before counting (a key's first job pays
    // one write more, once): what a job of a key in use costs.
    setup: async (h) => {
      const slots = new DynamoFlowSlots(h.platform.clients.dynamo, h.platform.config.tableName);
      const slot = { scope: 'limited#0', key: 'bench-tenant', limit: 2 };
      await asActor('setup', async () => {
        await slots.acquire({ slot, jobId: 'bench-setup', type: 'limited', now: Date.now(), token: 1 });
        await slots.release({ slot, jobId: 'bench-setup' });
      });
    },
    start: (h, i) => enqueue(h, { type: 'limited', payload: { tenant: 'bench-tenant', i } }),
    type: 'limited',
    waitSeconds: 1,
  },
  {
    id: 'fair-free',
    label:
      'Immediate job of a limit of 1 shared fairly between tenants (fairBy), its place free: it takes the place at enqueue, its attempt takes it over, succeeds',
    // the slot item created before counting, as for concurrency-free
    setup: async (h) => {
      const slots = new DynamoFlowSlots(h.platform.clients.dynamo, h.platform.config.tableName);
      const slot = heldSlot('fair', 0);
      await asActor('setup', async () => {
        await slots.acquire({ slot, jobId: 'bench-setup', type: 'fair', now: Date.now(), token: 1 });
        await slots.release({ slot, jobId: 'bench-setup' });
      });
    },
    start: (h, i) => enqueue(h, { type: 'fair', payload: { tenant: `bench-free-${i}`, i } }),
    type: 'fair',
    waitSeconds: 1,
  },
  waitPath(
    'concurrency-wait',
    'lined',
    'Immediate job with a concurrency limit (1 per tenant), its slot held: it waits in the oldest-first line, is handed the slot, succeeds',
  ),
  waitPath(
    'priority-wait',
    'ranked',
    'Immediate job with a concurrency limit (1 per tenant), a type with priorities, its slot held: it joins the ranked line at enqueue (no message), is admitted, succeeds',
  ),
  waitPath(
    'fair-wait',
    'fair',
    "Immediate job with a limit of 1 shared fairly between tenants (fairBy), held by another tenant: it joins its tenant's line at enqueue (no message), is admitted, succeeds",
  ),
  {
    id: 'singleton-free',
    label: 'Immediate job with a singleton (queue, per tenant), key free, succeeds',
    setup: async (h) => {
      const slots = new DynamoFlowSlots(h.platform.clients.dynamo, h.platform.config.tableName);
      const slot = { scope: '@single', key: 'bench-tenant', limit: 1 };
      await asActor('setup', async () => {
        await slots.acquire({ slot, jobId: 'bench-setup', type: 'single', now: Date.now(), token: 1 });
        await slots.release({ slot, jobId: 'bench-setup' });
      });
    },
    start: (h, i) => enqueue(h, { type: 'single', payload: { tenant: 'bench-tenant', i } }),
    type: 'single',
    waitSeconds: 1,
  },
  {
    id: 'throttle-free',
    label: 'Immediate job with a throttle (per tenant), its turn now, succeeds',
    start: (h, i) => enqueue(h, { type: 'paced', payload: { tenant: 'bench-tenant', i } }),
    type: 'paced',
    waitSeconds: 1,
  },
  {
    id: 'throttle-line-wait',
    label:
      'Job of a throttled type with priorities (1 per 2 s per tenant), no turn free: it waits in the throttle line, takes the next turn, succeeds',
    start: async (h, i) => {
      const pacer = new DynamoPacer(h.platform.clients.dynamo, h.platform.config.tableName);
      const throttle = pacedRankedJob.throttle as { limit: number; periodSeconds: number };
      // another job of the tenant took the turn that was free
      await asActor('setup', () =>
        pacer.lineTurn({
          scope: paceScope(pacedRankedJob.type, 'throttle'),
          key: `bench-${i}`,
          now: h.clock.now(),
          pace: throttlePace(throttle),
          job: { jobId: `bench-setup-${i}`, type: pacedRankedJob.type, rank: `0#bench-setup-${i}` },
          inLine: false,
        }),
      );
      return enqueue(h, { type: pacedRankedJob.type, payload: { tenant: `bench-${i}`, i } });
    },
    type: pacedRankedJob.type,
    waitSeconds: 3,
  },
  {
    id: 'rate-limit-accepted',
    label: 'Immediate job with a rate limit (per tenant), accepted, succeeds',
    start: (h, i) => enqueue(h, { type: 'rated', payload: { tenant: 'bench-tenant', i } }),
    type: 'rated',
    waitSeconds: 1,
  },
  {
    id: 'debounce-run',
    label: 'Debounced job alone in its window (1 s quiet), runs',
    // a key per trace: each job is its own run (one that replaces another costs its skip, 1 more)
    start: (h, i) => enqueue(h, { type: 'debounced', payload: { key: `bench-${i}-${Date.now()}` } }),
    type: 'debounced',
    waitSeconds: 3,
  },
  {
    id: 'steps-10',
    label: 'Job of 10 durable steps (ctx.step, ~40-byte results), succeeds',
    start: (h) => enqueue(h, { type: 'stepper', payload: { steps: 10 } }),
    type: 'stepper',
    waitSeconds: 1,
  },
  {
    id: 'sleep-2h',
    label: 'Job that sleeps 2 h once (ctx.sleep: the attempt ends, the job waits), then succeeds',
    start: (h, i) => enqueue(h, { type: 'sleeper', payload: { i } }),
    type: 'sleeper',
    waitSeconds: 1,
  },
  {
    id: 'signal-wait',
    label: 'Job that waits for a signal, sent once it waits (POST /jobs/{id}/signals/go), then succeeds',
    start: (h, i) => enqueue(h, { type: 'signaled', payload: { i } }),
    during: async (h, jobs) => {
      let calls = 0;
      for (const job of jobs) {
        if (job?.state !== 'waiting' || job.waitSignal !== 'go') continue;
        await call(h, 'api', 'POST', `/jobs/${encodeURIComponent(job.id)}/signals/go`, { payload: { ok: 1 } });
        calls += 1;
      }
      return calls;
    },
    type: 'signaled',
    waitSeconds: 1,
  },
  {
    id: 'flow-edge',
    label: 'Flow of two jobs, B dependsOn A (POST /flows), both succeed; per edge',
    start: async (h, i) => {
      const [a, b] = [`edge-${i}-${Date.now()}-a`, `edge-${i}-${Date.now()}-b`];
      const { ms } = await call(h, 'api', 'POST', '/flows', {
        jobs: [
          { id: a, type: 'echo', payload: { i } },
          { id: b, type: 'echo', payload: { i }, dependsOn: [a] },
        ],
      });
      return { ids: [a, b], jobs: 1, apiInvocations: 1, apiMs: ms, schedulerInvocations: 0 };
    },
    waitSeconds: 1,
  },
  {
    id: 'enqueue-edge',
    label: 'Job B enqueued with dependsOn [A] while A waits (POST /jobs twice), both succeed; per edge',
    start: async (h, i) => {
      const a = await enqueue(h, { type: 'echo', payload: { i }, delaySeconds: 1 });
      const [parent] = a.ids;
      const b = await enqueue(h, { type: 'echo', payload: { i }, dependsOn: [parent] });
      return {
        ids: [...a.ids, ...b.ids],
        jobs: 1,
        apiInvocations: a.apiInvocations + b.apiInvocations,
        apiMs: a.apiMs + b.apiMs,
        schedulerInvocations: 0,
      };
    },
    waitSeconds: 3,
  },
  {
    id: 'sqs-delayed',
    label: 'Delayed ≤ 15 min (SQS DelaySeconds)',
    start: (h, i) => enqueue(h, { type: 'echo', payload: { i }, delaySeconds: 1 }),
    waitSeconds: 3,
  },
  {
    id: 'scheduler-delayed',
    label: 'Delayed > 15 min (EventBridge Scheduler)',
    start: async (h, i) => {
      const started = await enqueue(h, { type: 'echo', payload: { i }, runAt: twoHoursAhead(h) });
      // Time passes until the job's one-time schedule is due, and the Scheduler fires it.
      return { ...started, schedulerInvocations: await fireNext(h, (e) => e.startsWith('at(')) };
    },
    waitSeconds: 1,
  },
  {
    id: 'retry-once',
    label: 'Fails once, then succeeds (flaky, 1 s backoff)',
    start: (h) => enqueue(h, { type: 'flaky', payload: { failTimes: 1 } }),
    type: 'flaky',
    waitSeconds: 3,
    statusItem: true,
  },
  {
    id: 'retry-5-stacks',
    label: 'Fails 5 times with 8 KB stacks, succeeds on attempt 6 (stacky, no backoff)',
    start: (h) => enqueue(h, { type: 'stacky', payload: { failTimes: 5, stackBytes: 8 * 1024 } }),
    type: 'stacky',
    waitSeconds: 1,
    statusItem: true,
  },
  {
    id: 'event-1',
    label: 'An event one type subscribes to (POST /events), its job succeeds',
    start: async (h, i) => {
      const { response, ms } = await call(h, 'api', 'POST', '/events', { name: 'bench.pinged', data: { i } });
      const { jobs } = responseJson<{ jobs: { id: string }[] }>(response);
      if (jobs.length !== 1) throw new Error(`the event made ${jobs.length} jobs, not 1`);
      return { ids: jobs.map((j) => j.id), jobs: 1, apiInvocations: 1, apiMs: ms, schedulerInvocations: 0 };
    },
    type: 'notified',
    waitSeconds: 1,
  },
  {
    id: 'emit-1',
    label: 'A job that sends an event (ctx.emit) one type subscribes to; both jobs succeed; per sending job',
    start: (h, i) => enqueue(h, { type: 'emitter', payload: { i } }),
    types: ['emitter', 'notified'],
    discover: true,
    waitSeconds: 1,
  },
  {
    id: 'event-wait',
    label:
      'Job that waits for an event matched on a field (ctx.waitForEvent), sent once it waits (POST /events), then succeeds',
    start: (h, i) => enqueue(h, { type: 'awaiting', payload: { orderId: `order-${i}-${Date.now()}` } }),
    during: async (h, jobs) => {
      let calls = 0;
      for (const job of jobs) {
        if (job?.state !== 'waiting' || !job.waitSignal?.startsWith('event:')) continue;
        const { orderId } = job.payload as { orderId: string };
        await call(h, 'api', 'POST', '/events', { name: 'bench.paid', id: `paid-${orderId}`, data: { orderId } });
        calls += 1;
      }
      return calls;
    },
    type: 'awaiting',
    waitSeconds: 1,
  },
  {
    id: 'invoke-1',
    label: 'A job that invokes one child (ctx.invoke) and returns its result; both succeed; per invoking job',
    start: (h, i) => enqueue(h, { type: 'invoker', payload: { i } }),
    types: ['invoker', 'echo'],
    discover: true,
    waitSeconds: 1,
  },
  {
    id: 'batch-100',
    label: 'Batch enqueue of 100 (POST /jobs:batch), per job',
    start: async (h, i) => {
      const jobs = Array.from({ length: BATCH_JOBS }, (_, n) => ({ type: 'echo', payload: { batch: i, n } }));
      const { response, ms } = await call(h, 'api', 'POST', '/jobs:batch', { jobs });
      const { results } = responseJson<{ results: { status: string; job?: { id: string } }[] }>(response);
      const ids = results.map((r) => r.job?.id).filter((id): id is string => id !== undefined);
      if (ids.length !== jobs.length) throw new Error(`batch enqueue created ${ids.length} of ${jobs.length} jobs`);
      return { ids, jobs: jobs.length, apiInvocations: 1, apiMs: ms, schedulerInvocations: 0 };
    },
    waitSeconds: 1,
    batchSize: 10,
    traces: 1,
  },
  {
    id: 'cron-fire',
    label: 'Cron fire (recurring schedule, every 5 min), per fire',
    setup: async (h) => {
      await call(h, 'setup', 'POST', '/schedules', {
        name: CRON,
        type: 'echo',
        payload: { cron: true },
        rate: '5 minutes',
      });
    },
    start: async (h) => ({
      ids: [],
      jobs: 1,
      apiInvocations: 0,
      apiMs: 0,
      schedulerInvocations: await fireNext(h, (e) => !e.startsWith('at(')),
    }),
    waitSeconds: 1,
    discover: true,
  },
  {
    id: 'cancel',
    label: 'Cancel a scheduled job (API only), per cancel',
    start: async (h, i) => {
      const { response } = await call(h, 'setup', 'POST', '/jobs', {
        type: 'echo',
        payload: { cancel: i },
        runAt: twoHoursAhead(h),
      });
      const id = responseJson<JobView>(response).id;
      const { ms } = await call(h, 'api', 'POST', `/jobs/${encodeURIComponent(id)}/cancel`, {});
      return { ids: [id], jobs: 1, apiInvocations: 1, apiMs: ms, schedulerInvocations: 0 };
    },
    until: 'cancelled',
    waitSeconds: 1,
  },
];
