/**
 * The one hand-off: the pure plan (core/hand-off.ts) at each boundary, and its executor
 * (dispatch/dispatch.ts) against the in-memory queue and scheduler, including the fallbacks of a
 * held message.
 */
import { describe, expect, it } from 'vitest';
import { MAX_VISIBILITY_DELAY_MS } from '../../shared/core/backoff';
import { planHandOff } from '../../shared/core/hand-off';
import { retryScheduleName } from '../../shared/core/ports';
import { SCHEDULE_LEAD_MS } from '../../shared/core/scheduling';
import { dispatch, dispatchOrPend } from '../../shared/dispatch/dispatch';
import { createLogger } from '../../shared/logger';
import { persist } from '../../shared/runtime/attempt-support';
import { captureLogs, FakeJobQueue, FakeJobScheduler, newJob, sqsRecord, testConfig } from '../support/fakes';

const NOW = Date.parse('2026-03-01T12:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const at = (seconds: number) => NOW + seconds * 1000;
const plan = (seconds: number, more: { scheduler?: boolean; received?: boolean } = {}) =>
  planHandOff({ runAt: at(seconds), now: NOW, scheduler: more.scheduler ?? true, scheduleName: 'j1', ...more });

describe('the hand-off plan without a held message', () => {
  it('sends a job due now (or past) without a delay', () => {
    expect(plan(0)).toEqual({ kind: 'send' });
    expect(plan(-30)).toEqual({ kind: 'send' });
  });

  it('delays the send by the remaining seconds, rounded up, up to 900 s', () => {
    expect(plan(0.001)).toEqual({ kind: 'send', delaySeconds: 1 });
    expect(plan(899.5)).toEqual({ kind: 'send', delaySeconds: 900 });
    expect(plan(900)).toEqual({ kind: 'send', delaySeconds: 900 });
  });

  it('schedules a job due after 900 s, firing a minute ahead and carrying its runAt', () => {
    expect(plan(900.001)).toEqual({
      kind: 'schedule',
      name: 'j1',
      fireAt: at(900.001) - SCHEDULE_LEAD_MS,
      notBefore: at(900.001),
    });
    expect(plan(901)).toEqual({ kind: 'schedule', name: 'j1', fireAt: at(901) - SCHEDULE_LEAD_MS, notBefore: at(901) });
  });

  it('without a scheduler, sends a far job with the longest delay (its worker hides it again)', () => {
    expect(plan(901, { scheduler: false })).toEqual({ kind: 'send', delaySeconds: 900 });
    expect(plan(86_400, { scheduler: false })).toEqual({ kind: 'send', delaySeconds: 900 });
  });
});

describe('the hand-off plan with a held message', () => {
  const maxSeconds = MAX_VISIBILITY_DELAY_MS / 1000;

  it('hides the held message until runAt, past 900 s too', () => {
    expect(plan(0, { received: true })).toEqual({ kind: 'keep', visibilitySeconds: 0 });
    expect(plan(-5, { received: true })).toEqual({ kind: 'keep', visibilitySeconds: 0 });
    expect(plan(1.5, { received: true })).toEqual({ kind: 'keep', visibilitySeconds: 1.5 });
    expect(plan(901, { received: true })).toEqual({ kind: 'keep', visibilitySeconds: 901 });
    expect(plan(maxSeconds, { received: true })).toEqual({ kind: 'keep', visibilitySeconds: maxSeconds });
  });

  it('schedules past 11 h 40 min, firing at runAt', () => {
    const runAt = NOW + MAX_VISIBILITY_DELAY_MS + 1;
    expect(planHandOff({ runAt, now: NOW, scheduler: true, received: true, scheduleName: '_r1.j1' })).toEqual({
      kind: 'schedule',
      name: '_r1.j1',
      fireAt: runAt,
      notBefore: runAt,
    });
  });

  it('without a scheduler, hides it as long as SQS allows', () => {
    expect(plan(maxSeconds + 3_600, { received: true, scheduler: false })).toEqual({
      kind: 'keep',
      visibilitySeconds: maxSeconds,
    });
  });
});

/** The contract-tested scheduler, made to refuse its next calls. */
class RefusingScheduler extends FakeJobScheduler {
  refusals = 0;
  override async scheduleJob(input: Parameters<FakeJobScheduler['scheduleJob']>[0]): Promise<void> {
    if (this.refusals > 0) {
      this.refusals -= 1;
      throw new Error('Scheduler is unavailable');
    }
    await super.scheduleJob(input);
  }
}

function setup() {
  const config = testConfig(['email']);
  const queue = new FakeJobQueue();
  const scheduler = new RefusingScheduler();
  const route = config.routes.email as { queueUrl: string; queueArn: string };
  return { deps: { queue, scheduler, routes: config.routes }, queue, scheduler, route };
}

describe('dispatch', () => {
  it('sends a due job to its type queue, with the job message', async () => {
    const { deps, queue, route } = setup();
    expect(await dispatch(deps, newJob({ id: 'j1', type: 'email', runAt: iso(NOW) }), NOW)).toBe('done');
    expect(queue.sent).toEqual([
      { queueUrl: route.queueUrl, message: { v: 1, id: 'j1', type: 'email' }, delaySeconds: undefined },
    ]);
  });

  it('carries the run a job waits for (a schedule run of queue-one) on its message', async () => {
    const { deps, queue } = setup();
    await dispatch(deps, newJob({ id: 'j1', type: 'email', runAt: iso(NOW), after: 'j0' }), NOW);
    expect(queue.sent[0]?.message).toEqual({ v: 1, id: 'j1', type: 'email', after: 'j0' });
  });

  it('delays a job due within 15 minutes, and schedules a later one under its id', async () => {
    const { deps, queue, scheduler, route } = setup();
    await dispatch(deps, newJob({ id: 'soon', type: 'email', runAt: iso(at(120)) }), NOW);
    await dispatch(deps, newJob({ id: 'far', type: 'email', runAt: iso(at(3_600)) }), NOW);
    expect(queue.sent.map((s) => [s.message.id, s.delaySeconds])).toEqual([['soon', 120]]);
    expect(scheduler.schedules.get('far')).toEqual({
      fireAt: at(3_600) - SCHEDULE_LEAD_MS,
      queueArn: route.queueArn,
      message: { v: 1, id: 'far', type: 'email', notBefore: iso(at(3_600)) },
    });
  });

  it('sends at once when told the job is due now, whatever its runAt', async () => {
    const { deps, queue, scheduler } = setup();
    await dispatch(deps, newJob({ id: 'j1', type: 'email', runAt: iso(at(3_600)) }), NOW, { runAt: NOW });
    expect(queue.sent.map((s) => s.delaySeconds)).toEqual([undefined]);
    expect(scheduler.schedules.size).toBe(0);
  });

  it('without a scheduler, sends a far job with the longest SQS delay', async () => {
    const { queue, routes } = { ...setup(), routes: testConfig(['email']).routes };
    await dispatch({ queue, routes }, newJob({ id: 'j1', type: 'email', runAt: iso(at(3_600)) }), NOW);
    expect(queue.sent.map((s) => s.delaySeconds)).toEqual([900]);
  });

  it('throws for a job type with no route, and when a schedule fails with no held message', async () => {
    const { deps, scheduler } = setup();
    await expect(dispatch(deps, newJob({ id: 'j1', type: 'other' }), NOW)).rejects.toThrow(/no route/);
    scheduler.refusals = 1;
    await expect(dispatch(deps, newJob({ id: 'j2', type: 'email', runAt: iso(at(3_600)) }), NOW)).rejects.toThrow(
      /unavailable/,
    );
  });
});

describe('dispatch with a held message (the worker)', () => {
  const received = { queueUrl: 'https://sqs.example/orrery-email', receiptHandle: 'rh-1' };
  const job = newJob({ id: 'j1', type: 'email', state: 'retrying', attempts: 1 });

  it('hides the message until runAt: it comes back (retry)', async () => {
    const { deps, queue } = setup();
    expect(await dispatch(deps, job, NOW, { runAt: at(3_600), received, what: 'retry' })).toBe('retry');
    expect(queue.visibility).toEqual([{ ...received, seconds: 3_600 }]);
    expect(queue.sent).toEqual([]);
  });

  it('past 11 h 40 min, schedules under the given name, firing at runAt: the message is done', async () => {
    const { deps, queue, scheduler } = setup();
    const runAt = NOW + MAX_VISIBILITY_DELAY_MS + 60_000;
    const name = retryScheduleName('j1', 1);
    expect(await dispatch(deps, job, NOW, { runAt, received, scheduleName: name })).toBe('done');
    expect(scheduler.schedules.get(name)).toMatchObject({
      fireAt: runAt,
      message: { v: 1, id: 'j1', type: 'email', notBefore: iso(runAt) },
    });
    expect(queue.visibility).toEqual([]);
  });

  it('makes no schedule for a held message without a schedule name: it hides it as long as SQS allows', async () => {
    const { deps, queue, scheduler } = setup();
    const runAt = NOW + MAX_VISIBILITY_DELAY_MS + 60_000;
    expect(await dispatch(deps, job, NOW, { runAt, received })).toBe('retry');
    expect(scheduler.schedules.size).toBe(0);
    expect(queue.visibility).toEqual([{ ...received, seconds: MAX_VISIBILITY_DELAY_MS / 1000 }]);
  });

  it('when the schedule fails, hides the message as long as SQS allows, and says so', async () => {
    const { deps, queue, scheduler } = setup();
    scheduler.refusals = 1;
    const { sink, lines } = captureLogs();
    const log = createLogger({ level: 'info', sink });
    const runAt = NOW + MAX_VISIBILITY_DELAY_MS + 60_000;
    const result = await dispatch(deps, job, NOW, { runAt, received, scheduleName: '_r1.j1', log, what: 'retry' });
    expect(result).toBe('retry');
    expect(queue.visibility).toEqual([{ ...received, seconds: MAX_VISIBILITY_DELAY_MS / 1000 }]);
    expect(lines.map((l) => l.msg ?? l.message)).toContain(
      'could not schedule the retry; the message waits for it instead',
    );
  });

  it('tries the schedule and the new message through the given persist, naming them', async () => {
    const { deps, queue, scheduler } = setup();
    scheduler.refusals = 1;
    queue.failNext('changeVisibility', new Error('receipt handle expired'));
    const tried: string[] = [];
    const persist = async <T>(write: () => Promise<T>, what: string): Promise<T> => {
      tried.push(what);
      return write();
    };
    const runAt = NOW + MAX_VISIBILITY_DELAY_MS + 60_000;
    const result = await dispatch(deps, job, NOW, { runAt, received, scheduleName: 'n', persist, what: 'sleep wait' });
    expect(result).toBe('done');
    expect(tried).toEqual(['scheduling the sleep wait', 'sending the sleep wait message']);
    expect(queue.sent.map((s) => s.delaySeconds)).toEqual([900]);
  });

  it('when hiding fails (the message may be gone), sends a new one carrying the delay: done', async () => {
    const { deps, queue } = setup();
    queue.failNext('changeVisibility', new Error('receipt handle expired'));
    expect(await dispatch(deps, job, NOW, { runAt: at(30), received })).toBe('done');
    expect(queue.sent).toEqual([
      {
        queueUrl: expect.stringContaining('orrery-email'),
        message: { v: 1, id: 'j1', type: 'email' },
        delaySeconds: 30,
      },
    ]);
  });
});

describe('dispatchOrPend (the API batches its sends)', () => {
  it('returns the send to make, and makes nothing itself', async () => {
    const { deps, queue, route } = setup();
    const pending = await dispatchOrPend(deps, newJob({ id: 'j1', type: 'email', runAt: iso(at(10)) }), NOW);
    expect(pending).toEqual({ queueUrl: route.queueUrl, message: { v: 1, id: 'j1', type: 'email' }, delaySeconds: 10 });
    expect(queue.sent).toEqual([]);
  });

  it('makes the schedule of a far job and returns no send', async () => {
    const { deps, scheduler } = setup();
    expect(await dispatchOrPend(deps, newJob({ id: 'j1', type: 'email', runAt: iso(at(901)) }), NOW)).toBeUndefined();
    expect(scheduler.schedules.get('j1')?.fireAt).toBe(at(901) - SCHEDULE_LEAD_MS);
  });
});

describe('the SQS message group (fair queues)', () => {
  const keyed = { id: 'j1', type: 'email', runAt: iso(NOW), flowKeys: ['acme', '*'] };
  const grouped = () => {
    const { deps, ...rest } = setup();
    return { deps: { ...deps, fairQueues: new Set(['email']) }, ...rest };
  };

  it('sends a keyed job of a type in fairQueues in its group, whichever hand-off sends it', async () => {
    const { deps, queue, route } = grouped();
    await dispatch(deps, newJob(keyed), NOW);
    await dispatch(deps, newJob({ ...keyed, id: 'j2', runAt: iso(at(120)) }), NOW);
    expect(queue.sent).toEqual([
      {
        queueUrl: route.queueUrl,
        message: { v: 1, id: 'j1', type: 'email' },
        delaySeconds: undefined,
        groupId: 'email:acme',
      },
      {
        queueUrl: route.queueUrl,
        message: { v: 1, id: 'j2', type: 'email' },
        delaySeconds: 120,
        groupId: 'email:acme',
      },
    ]);
    // the API's batched send carries it too
    expect(await dispatchOrPend(deps, newJob({ ...keyed, runAt: iso(at(10)) }), NOW)).toEqual({
      queueUrl: route.queueUrl,
      message: { v: 1, id: 'j1', type: 'email' },
      delaySeconds: 10,
      groupId: 'email:acme',
    });
    // and the new message that replaces a held one the worker could not hide
    queue.failNext('changeVisibility', new Error('receipt handle expired'));
    const received = { queueUrl: route.queueUrl, receiptHandle: 'rh-1' };
    expect(await dispatch(deps, newJob({ ...keyed, id: 'j3' }), NOW, { runAt: at(30), received })).toBe('done');
    expect(queue.sent.at(-1)).toMatchObject({ message: { id: 'j3' }, delaySeconds: 30, groupId: 'email:acme' });
  });

  it('sends no group for a type not in fairQueues, for a job without a key, or when only its id is known', async () => {
    const { deps, queue } = setup();
    await dispatch(deps, newJob(keyed), NOW);
    const on = grouped();
    await dispatch(on.deps, newJob({ id: 'plain', type: 'email', runAt: iso(NOW) }), NOW);
    await dispatch(on.deps, { id: 'by-id', type: 'email' }, NOW);
    expect([...queue.sent, ...on.queue.sent].map((s) => s.groupId)).toEqual([undefined, undefined, undefined]);
  });

  it("makes a far job's one-time schedule without a group (not verified on a standard queue)", async () => {
    const { deps, scheduler } = grouped();
    await dispatch(deps, newJob({ ...keyed, runAt: iso(at(3_600)) }), NOW);
    expect(scheduler.schedules.get('j1')?.message).toEqual({
      v: 1,
      id: 'j1',
      type: 'email',
      notBefore: iso(at(3_600)),
    });
  });
});

describe("the worker's deferral is one call", () => {
  it('a retry past 11 h 40 min: scheduled under its retry name through persist, the message done', async () => {
    const { queue, scheduler } = setup();
    const config = testConfig(['email']);
    const record = sqsRecord({ v: 1, id: 'j1', type: 'email' });
    const log = createLogger({ level: 'silent' });
    const job = newJob({ id: 'j1', type: 'email', state: 'retrying', attempts: 2 });
    const runAt = NOW + MAX_VISIBILITY_DELAY_MS + 1;
    const outcome: 'retry' | 'done' = await dispatch(
      { queue, scheduler, routes: config.routes, queues: config.queues },
      job,
      NOW,
      {
        runAt,
        received: { queueUrl: config.routes.email?.queueUrl ?? '', receiptHandle: record.receiptHandle },
        scheduleName: retryScheduleName(job.id, job.attempts),
        log,
        what: 'retry',
        persist: (write, what) => persist(write, log, what),
      },
    );
    expect(outcome).toBe('done');
    expect([...scheduler.schedules.keys()]).toEqual([retryScheduleName('j1', 2)]);
  });
});
