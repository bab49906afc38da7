/**
 * The worker's scheduling branches on in-memory ports: early messages of far-future jobs,
 * dispatch deadlines, recurring-schedule fires (deterministic runs, overlap policies).
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../shared/core/clock';
import { fireMessage, runId } from '../../shared/core/fire-message';
import { createLogger } from '../../shared/logger';
import type { JobDefinition } from '../../shared/runtime/job-definition';
import { createWorker } from '../../shared/runtime/worker';
import type { Schedule } from '../../shared/schedules/model';
import { captureLogs, FakeJobQueue, FakeJobStore, newJob, sqsEvent, sqsRecord, testConfig } from '../support/fakes';
import { FakeScheduleStore } from '../support/scheduling-fakes';
import { echoSpec, logged, T0 } from './worker-harness';

const MIN = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

function setup(options: { withSchedules?: boolean; run?: JobDefinition['run'] } = {}) {
  const store = new FakeJobStore();
  const queue = new FakeJobQueue();
  const schedules = new FakeScheduleStore();
  const clock = new ManualClock(T0);
  const logs = captureLogs();
  const calls: string[] = [];
  const def: JobDefinition = {
    spec: echoSpec,
    run:
      options.run ??
      (async (payload, ctx) => {
        calls.push(ctx.jobId);
        return payload;
      }),
    onFailure: undefined,
  };
  const worker = createWorker(def, {
    config: testConfig(['echo']),
    store,
    queue,
    clock,
    owner: 'worker-test',
    logger: createLogger({ level: 'debug', sink: logs.sink }),
    ...(options.withSchedules === false ? {} : { schedules }),
  });
  return { store, queue, schedules, clock, logs: logs.lines, calls, worker };
}

function jobRecord(id: string, extra: Record<string, unknown> = {}, receiveCount = 1) {
  return sqsRecord({ v: 1, id, type: 'echo', ...extra }, { messageId: `m-${id}`, receiveCount });
}

function fireRecord(name: string, at: number, messageId = `f-${name}-${at}`) {
  return sqsRecord(fireMessage(name, 'echo', at), { messageId });
}

function minutely(overrides: Partial<Schedule> = {}): Schedule {
  return {
    name: 'tick',
    type: 'echo',
    cron: '* * * * *',
    expression: 'cron(* * * * ? *)',
    timezone: 'UTC',
    maxAttempts: 2,
    overlap: 'allow',
    state: 'enabled',
    payloadHash: 'h-tick',
    createdAt: iso(T0 - MIN),
    updatedAt: iso(T0 - MIN),
    version: 1,
    nextFireAt: T0,
    skipped: 0,
    missed: 0,
    ...overrides,
  };
}

function seedSchedule(h: ReturnType<typeof setup>, schedule: Schedule): void {
  h.schedules.schedules.set(schedule.name, schedule);
  h.schedules.payloads.set(schedule.name, { payload: { n: 7 }, payloadHash: schedule.payloadHash });
}

describe('worker: far-future jobs whose schedule fires early', () => {
  it('does not start a scheduled job before runAt: it hides the message for the remaining seconds', async () => {
    const h = setup();
    h.store.seed(newJob({ id: 'later', type: 'echo', payload: { n: 1 }, state: 'scheduled', runAt: iso(T0 + 60_000) }));
    const response = await h.worker(sqsEvent(jobRecord('later')));
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'm-later' }]);
    expect(h.queue.visibility).toEqual([expect.objectContaining({ receiptHandle: 'rh-m-later', seconds: 60 })]);
    expect(h.calls).toEqual([]);
    expect(h.store.peek('later')).toMatchObject({ state: 'scheduled', attempts: 0 });

    h.clock.advance(59_500); // within the 1 s tolerance: due
    const again = await h.worker(sqsEvent(jobRecord('later', {}, 2)));
    expect(again.batchItemFailures).toEqual([]);
    expect(h.calls).toEqual(['later']);
    expect(h.store.peek('later')).toMatchObject({ state: 'succeeded', attempts: 1 });
  });

  it('hides it for whole seconds rounded down, then waits out the last fraction in the worker', async () => {
    const h = setup();
    h.store.seed(newJob({ id: 'soon', type: 'echo', payload: { n: 1 }, state: 'scheduled', runAt: iso(T0 + 2_300) }));
    await h.worker(sqsEvent(jobRecord('soon')));
    expect(h.queue.visibility.map((v) => v.seconds)).toEqual([2]);
    h.clock.advance(2_000); // the message is back 300 ms before runAt: claimed, the handler waits
    const started = Date.now();
    await h.worker(sqsEvent(jobRecord('soon', {}, 2)));
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
    expect(h.calls).toEqual(['soon']);
  });
});

describe('worker: dispatchBy', () => {
  it('records expired instead of running a job past its deadline', async () => {
    const h = setup();
    h.store.seed(newJob({ id: 'stale', type: 'echo', payload: { n: 1 }, dispatchBy: iso(T0 - 1) }));
    const response = await h.worker(sqsEvent(jobRecord('stale')));
    expect(response.batchItemFailures).toEqual([]);
    expect(h.calls).toEqual([]);
    expect(h.store.peek('stale')).toMatchObject({ state: 'expired', attempts: 0, finishedAt: iso(T0) });
    expect(logged(h.logs, 'job expired: not started before its dispatchBy')).toHaveLength(1);
    // A later duplicate finds it finished.
    await h.worker(sqsEvent(jobRecord('stale')));
    expect(h.calls).toEqual([]);
  });

  it('runs a job before its deadline, and its retries after it', async () => {
    let attempt = 0;
    const h = setup({
      run: async () => {
        attempt += 1;
        if (attempt === 1) throw new Error('first attempt fails');
        return { ok: true };
      },
    });
    h.store.seed(newJob({ id: 'ok', type: 'echo', payload: { n: 1 }, dispatchBy: iso(T0 + 1000) }));
    await h.worker(sqsEvent(jobRecord('ok')));
    expect(h.store.peek('ok')?.state).toBe('retrying');
    h.clock.advance(5_000); // past dispatchBy: the job started already, so it retries
    await h.worker(sqsEvent(jobRecord('ok', {}, 2)));
    expect(h.store.peek('ok')).toMatchObject({ state: 'succeeded', attempts: 2 });
  });
});

describe('worker: recurring schedule fires', () => {
  it('turns a fire into a run with a deterministic id and runs it', async () => {
    const h = setup();
    seedSchedule(h, minutely());
    const response = await h.worker(sqsEvent(fireRecord('tick', T0)));
    expect(response.batchItemFailures).toEqual([]);
    const id = runId('tick', T0);
    expect(h.calls).toEqual([id]);
    expect(h.store.peek(id)).toMatchObject({
      type: 'echo',
      state: 'succeeded',
      payload: { n: 7 },
      payloadHash: 'h-tick',
      maxAttempts: 2,
      runAt: iso(T0),
      schedule: 'tick',
      result: { n: 7 },
    });
    expect(await h.schedules.get('tick')).toMatchObject({
      version: 2,
      lastFireAt: T0,
      lastRunId: id,
      nextFireAt: T0 + MIN,
    });
  });

  it('creates one run for duplicate deliveries and Scheduler retries of the same fire', async () => {
    const h = setup();
    seedSchedule(h, minutely());
    await h.worker(sqsEvent(fireRecord('tick', T0, 'a'), fireRecord('tick', T0, 'b')));
    await h.worker(sqsEvent(fireRecord('tick', T0, 'c')));
    expect(h.calls).toEqual([runId('tick', T0)]);
    expect(h.store.calls.filter((c) => c.method === 'create' && c.id === runId('tick', T0)).length).toBeLessThanOrEqual(
      2,
    );
    expect((await h.schedules.get('tick'))?.lastFireAt).toBe(T0);
  });

  it('keeps one run per fire when the schedule item is contended', async () => {
    const h = setup();
    seedSchedule(h, minutely());
    h.schedules.conflictNext = 3;
    await h.worker(sqsEvent(fireRecord('tick', T0)));
    expect(h.calls).toEqual([runId('tick', T0)]);
    expect(h.schedules.conflicts).toBe(3);
  });

  it('skip: does not start a run while the previous one is active, and counts the skipped fire', async () => {
    const h = setup();
    const previous = runId('tick', T0 - MIN);
    h.store.seed(newJob({ id: previous, type: 'echo', state: 'running', attempts: 1, schedule: 'tick' }));
    seedSchedule(h, minutely({ overlap: 'skip', lastRunId: previous, lastFireAt: T0 - MIN, lastRunReservedAt: T0 }));
    const response = await h.worker(sqsEvent(fireRecord('tick', T0)));
    expect(response.batchItemFailures).toEqual([]);
    expect(h.calls).toEqual([]);
    expect(h.store.peek(runId('tick', T0))).toBeUndefined();
    expect(await h.schedules.get('tick')).toMatchObject({ skipped: 1, lastSkippedAt: T0, lastRunId: previous });
    // The previous run finished: the next fire runs.
    h.store.seed({ ...(h.store.peek(previous) as NonNullable<ReturnType<typeof h.store.peek>>), state: 'succeeded' });
    h.clock.advance(MIN);
    await h.worker(sqsEvent(fireRecord('tick', T0 + MIN)));
    expect(h.calls).toEqual([runId('tick', T0 + MIN)]);
  });

  it('queue-one: one run waits behind the active one, further fires are skipped', async () => {
    const h = setup();
    const previous = runId('tick', T0 - MIN);
    h.store.seed(newJob({ id: previous, type: 'echo', state: 'running', attempts: 1, schedule: 'tick' }));
    seedSchedule(
      h,
      minutely({ overlap: 'queue-one', lastRunId: previous, lastFireAt: T0 - MIN, lastRunReservedAt: T0 }),
    );

    const first = await h.worker(sqsEvent(fireRecord('tick', T0, 'f1')));
    const pending = runId('tick', T0);
    expect(first.batchItemFailures).toEqual([{ itemIdentifier: 'f1' }]); // waits: the fire message comes back
    expect(h.queue.visibility.at(-1)?.seconds).toBe(5);
    expect(h.store.peek(pending)).toMatchObject({ state: 'queued', after: previous });

    h.clock.advance(MIN);
    await h.worker(sqsEvent(fireRecord('tick', T0 + MIN, 'f2')));
    expect(h.store.peek(runId('tick', T0 + MIN))).toBeUndefined();
    expect((await h.schedules.get('tick'))?.skipped).toBe(1);

    // The redelivered first fire still waits while the previous run runs ...
    const waiting = await h.worker(
      sqsEvent(sqsRecord(fireMessage('tick', 'echo', T0), { messageId: 'f1', receiveCount: 2 })),
    );
    expect(waiting.batchItemFailures).toEqual([{ itemIdentifier: 'f1' }]);
    expect(h.queue.visibility.at(-1)?.seconds).toBe(10);
    expect(h.calls).toEqual([]);
    // ... and runs the pending run once it finished.
    h.store.seed({ ...(h.store.peek(previous) as NonNullable<ReturnType<typeof h.store.peek>>), state: 'succeeded' });
    const runs = await h.worker(
      sqsEvent(sqsRecord(fireMessage('tick', 'echo', T0), { messageId: 'f1', receiveCount: 3 })),
    );
    expect(runs.batchItemFailures).toEqual([]);
    expect(h.calls).toEqual([pending]);
  });

  it('ignores fires of a paused or deleted schedule', async () => {
    const h = setup();
    seedSchedule(h, minutely({ state: 'paused' }));
    expect((await h.worker(sqsEvent(fireRecord('tick', T0)))).batchItemFailures).toEqual([]);
    expect((await h.worker(sqsEvent(fireRecord('gone', T0)))).batchItemFailures).toEqual([]);
    expect(h.calls).toEqual([]);
  });

  it('leaves a misrouted fire, and a fire it cannot handle, for the DLQ / a redelivery', async () => {
    const h = setup();
    seedSchedule(h, minutely());
    const misrouted = sqsRecord({ ...fireMessage('tick', 'echo', T0), type: 'sleep' }, { messageId: 'x' });
    expect((await h.worker(sqsEvent(misrouted))).batchItemFailures).toEqual([{ itemIdentifier: 'x' }]);
    const noStore = setup({ withSchedules: false });
    expect((await noStore.worker(sqsEvent(fireRecord('tick', T0, 'y')))).batchItemFailures).toEqual([
      { itemIdentifier: 'y' },
    ]);
  });
});
