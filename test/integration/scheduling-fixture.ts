/**
 * A platform on local AWS for the scheduling tests: DynamoDB Local, fauxqs, the Scheduler
 * stand-in, the API, the workers and the supervisor, all on one {@link ShiftedClock} (real time
 * plus jumps), so "two hours later" is two hours later for Scheduler, the API, the workers and
 * the supervisor alike while SQS delays and visibility timeouts pass in real seconds.
 *
 * Job types: `echo` (returns its payload) and `sleep` (waits `ms`), with handlers that record
 * every execution (job id, clock time).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { inject } from 'vitest';
import { echoJob, sleepJob } from '../../functions/jobs/catalog';
import type { Job } from '../../shared/core/job';
import { createLogger } from '../../shared/logger';
import { defineJob } from '../../shared/runtime/define-job';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { type LocalPlatform, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';
import type { LocalSupervisorOptions } from '../local-aws/supervisor-loop';
import { ShiftedClock } from '../support/scheduling-clock';

export interface Execution {
  id: string;
  type: string;
  /** Clock time the handler started. */
  at: number;
}

export interface SchedulingFixture {
  clock: ShiftedClock;
  aws: LocalAws;
  platform: LocalPlatform;
  /** Every handler execution, in order. */
  executions: Execution[];
  // biome-ignore lint/suspicious/noExplicitAny: tests read response fields directly; each asserts the shape it needs
  request(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  job(id: string): Promise<Job | undefined>;
  /** Polls the job until it is in one of `states`. */
  waitFor(id: string, states: string[], timeoutMs?: number): Promise<Job>;
  /** Lets the stand-in deliver every fire due now (after a jump it fires on its own; this waits for it). */
  fire(): Promise<void>;
  /** The schedule group's schedules in the stand-in. */
  schedules(): ReturnType<LocalAws['scheduler']['list']>;
  /** Items of the table (a test-only scan). */
  items(): Promise<Record<string, unknown>[]>;
  stop(): Promise<void>;
}

export async function startSchedulingFixture(
  options: {
    label?: string;
    supervisor?: LocalSupervisorOptions;
    /**
     * Let the Scheduler stand-in fire on its own every second (as Scheduler does), instead of
     * only when the clock jumps or `fire()` is called. @default false
     */
    schedulerPolls?: boolean;
    /**
     * `false`: the stand-in stores schedules but never fires them by itself (as LocalStack's and
     * moto's Scheduler); only `fire()` delivers. @default true
     */
    schedulerFires?: boolean;
    /**
     * Lease length of the workers. A test that jumps the shared clock while a run is running
     * needs a lease longer than the jump: time does not jump under a live lease in reality (a
     * jump past it is a frozen worker, whose lease is rightly lost). @default 30_000
     */
    leaseMs?: number;
  } = {},
): Promise<SchedulingFixture> {
  const clock = new ShiftedClock();
  // A clock without onChange makes the stand-in poll (every second) rather than fire on jumps.
  const schedulerClock = options.schedulerPolls ? { now: () => clock.now() } : clock;
  const aws = await startLocalAws({
    dynamodbEndpoint: inject('dynamodbEndpoint'),
    clock: schedulerClock,
    ...(options.schedulerFires === false ? { autoFire: false } : {}),
  });
  const executions: Execution[] = [];
  const echo = defineJob(echoJob, async (payload, ctx) => {
    executions.push({ id: ctx.jobId, type: ctx.type, at: clock.now() });
    return payload;
  });
  const sleep = defineJob(sleepJob, async ({ ms }, ctx) => {
    executions.push({ id: ctx.jobId, type: ctx.type, at: clock.now() });
    await delay(ms, undefined, { signal: ctx.signal });
    return { sleptMs: ms };
  });
  const platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix(options.label ?? 'sched'),
    jobs: [echo, sleep],
    clock,
    logger: createLogger({ level: process.env.ORRERY_TEST_LOG === '1' ? 'debug' : 'silent' }),
    runner: { waitTimeSeconds: 1 },
    ...(options.leaseMs !== undefined ? { leaseMs: options.leaseMs } : {}),
    ...(options.supervisor ? { supervisor: options.supervisor } : {}),
  });
  const group = platform.config.scheduleGroup;

  const fixture: SchedulingFixture = {
    clock,
    aws,
    platform,
    executions,
    async request(method, path, body) {
      const response = await fetch(`${platform.url}${path}`, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : undefined };
    },
    job: (id) => platform.store.get(id),
    async waitFor(id, states, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      let last: Job | undefined;
      while (Date.now() < deadline) {
        last = await platform.store.get(id);
        if (last && states.includes(last.state)) return last;
        await delay(100);
      }
      throw new Error(`job ${id} did not reach ${states.join('|')} in ${timeoutMs} ms; last: ${JSON.stringify(last)}`);
    },
    async fire() {
      await aws.scheduler.fireDue();
    },
    schedules: () => aws.scheduler.list().filter((s) => s.GroupName === group),
    async items() {
      const out = await platform.clients.dynamo.send(new ScanCommand({ TableName: platform.config.tableName }));
      return (out.Items ?? []).map((item) => unmarshall(item));
    },
    async stop() {
      await platform.stop();
      await aws.stop();
    },
  };
  return fixture;
}

/** Waits `ms` of real time. */
export const sleepReal = (ms: number) => delay(ms);
