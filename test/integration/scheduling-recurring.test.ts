/**
 * Recurring schedules end to end on local AWS: the `/schedules` API, the EventBridge Scheduler
 * trigger (the stand-in fires it on the test clock), the worker turning fires into runs, the
 * overlap policies, and the supervisor firing what Scheduler did not.
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { runId } from '../../shared/core/fire-message';
import type { Job } from '../../shared/core/job';
import { triggerName } from '../../shared/schedules/model';
import { type SchedulingFixture, sleepReal, startSchedulingFixture } from './scheduling-fixture';

const MIN = 60_000;
let f: SchedulingFixture;

afterEach(async () => {
  await f?.stop();
});

/** The schedule's runs in the table (test-only scan). */
async function runsOf(name: string): Promise<Record<string, unknown>[]> {
  return (await f.items()).filter((item) => item.schedule === name && String(item.pk).startsWith('job#'));
}

/** Jumps to the schedule's next fire, lets Scheduler deliver it, and waits for its run to finish. */
async function fireNext(name: string, states = ['succeeded']): Promise<Job> {
  const { body } = await f.request('GET', `/schedules/${name}`);
  const slot = Date.parse(body.nextFireAt);
  f.clock.jumpTo(slot);
  await f.fire();
  return f.waitFor(runId(name, slot), states);
}

describe('a cron schedule', () => {
  it('is stored, gets its Scheduler trigger, and fires N times over N periods creating N runs', async () => {
    f = await startSchedulingFixture({ label: 'cron' });
    const created = await f.request('POST', '/schedules', {
      name: 'every-5',
      type: 'echo',
      payload: { report: 'daily' },
      cron: '*/5 * * * *',
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'every-5', expression: 'cron(0/5 * * * ? *)', state: 'enabled' });
    const trigger = f.schedules().find((s) => s.Name === triggerName('every-5'));
    expect(trigger).toMatchObject({ ScheduleExpression: 'cron(0/5 * * * ? *)', State: 'ENABLED' });
    expect(JSON.parse(trigger?.Target.Input ?? '{}')).toEqual({
      v: 1,
      kind: 'fire',
      schedule: 'every-5',
      type: 'echo',
      scheduledTime: '<aws.scheduler.scheduled-time>',
    });
    expect(trigger?.Target.Arn).toBe(f.platform.config.routes.echo?.queueArn);

    const slots: number[] = [];
    for (let i = 0; i < 3; i++) {
      const run = await fireNext('every-5');
      slots.push(Date.parse(run.runAt));
      expect(run).toMatchObject({ state: 'succeeded', result: { report: 'daily' }, schedule: 'every-5' });
    }
    const [s0 = 0, s1 = 0, s2 = 0] = slots;
    expect([s1 - s0, s2 - s1]).toEqual([5 * MIN, 5 * MIN]);
    const runs = await runsOf('every-5');
    expect(runs.map((r) => r.id).sort()).toEqual(slots.map((s) => runId('every-5', s)).sort());
    expect(f.executions).toHaveLength(3);

    const view = (await f.request('GET', '/schedules/every-5')).body;
    expect(view).toMatchObject({
      lastRunId: runId('every-5', s2),
      lastFireAt: new Date(s2).toISOString(),
      nextFireAt: new Date(s2 + 5 * MIN).toISOString(),
      payload: { report: 'daily' },
    });
  });

  it('pause stops fires (Scheduler and supervisor alike); resume fires again from the next slot', async () => {
    f = await startSchedulingFixture({ label: 'pause' });
    await f.request('POST', '/schedules', { name: 'tick', type: 'echo', payload: {}, cron: '* * * * *' });
    await fireNext('tick');

    const paused = await f.request('POST', '/schedules/tick/pause');
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ state: 'paused', nextFireAt: null });
    expect(f.schedules().find((s) => s.Name === triggerName('tick'))?.State).toBe('DISABLED');
    f.clock.advance(10 * MIN);
    await f.fire();
    const report = await f.platform.supervise();
    expect(report.fired).toEqual([]);
    await sleepReal(1_000);
    expect(await runsOf('tick')).toHaveLength(1);

    const resumed = await f.request('POST', '/schedules/tick/resume');
    expect(resumed.body.state).toBe('enabled');
    expect(Date.parse(resumed.body.nextFireAt)).toBeGreaterThan(f.clock.now());
    expect(f.schedules().find((s) => s.Name === triggerName('tick'))?.State).toBe('ENABLED');
    await fireNext('tick');
    expect(await runsOf('tick')).toHaveLength(2); // nothing from the paused minutes was caught up
  });

  it('skip: does not start a run while the previous (long) run is active, and records the skipped fire', async () => {
    f = await startSchedulingFixture({ label: 'skip', leaseMs: 10 * MIN }); // jumps a minute while a run runs
    await f.request('POST', '/schedules', {
      name: 'slow',
      type: 'sleep',
      payload: { ms: 4_000 },
      cron: '* * * * *',
      overlap: 'skip',
    });
    const first = await fireNext('slow', ['running']);
    const second = Date.parse((await f.request('GET', '/schedules/slow')).body.nextFireAt);
    f.clock.jumpTo(second);
    await f.fire();
    await sleepReal(1_000);
    expect(await f.job(runId('slow', second))).toBeUndefined();
    const view = (await f.request('GET', '/schedules/slow')).body;
    expect(view.skipped).toEqual({ count: 1, lastAt: new Date(second).toISOString() });
    expect(view.lastRunId).toBe(first.id);

    await f.waitFor(first.id, ['succeeded']);
    const third = await fireNext('slow');
    expect(third.id).toBe(runId('slow', second + MIN));
    expect(f.executions.map((e) => e.id)).toEqual([first.id, third.id]);
  });

  it('queue-one: one run waits behind the active one and starts when it finishes', async () => {
    f = await startSchedulingFixture({ label: 'queueone', leaseMs: 10 * MIN }); // jumps a minute while a run runs
    await f.request('POST', '/schedules', {
      name: 'one',
      type: 'sleep',
      payload: { ms: 3_000 },
      cron: '* * * * *',
      overlap: 'queue-one',
    });
    const first = await fireNext('one', ['running']);
    const second = Date.parse((await f.request('GET', '/schedules/one')).body.nextFireAt);
    f.clock.jumpTo(second);
    await f.fire();
    const pending = await f.waitFor(runId('one', second), ['queued']);
    expect(pending.after).toBe(first.id);
    f.clock.jumpTo(second + MIN); // a third fire while one runs and one waits: skipped
    await f.fire();
    await sleepReal(500);
    expect(await f.job(runId('one', second + MIN))).toBeUndefined();

    const done = await f.waitFor(pending.id, ['succeeded'], 30_000);
    const [a, b] = [await f.job(first.id), done];
    expect(Date.parse(b.startedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(a?.finishedAt ?? ''));
    expect((await f.request('GET', '/schedules/one')).body.skipped.count).toBe(1);
  });
});

describe('the supervisor fires what Scheduler did not', () => {
  it('creates the due runs of a schedule whose trigger was deleted behind Orrery’s back, with the same run ids', async () => {
    f = await startSchedulingFixture({ label: 'lostcron' });
    await f.request('POST', '/schedules', { name: 'gone', type: 'echo', payload: { n: 1 }, cron: '*/10 * * * *' });
    const first = Date.parse((await f.request('GET', '/schedules/gone')).body.nextFireAt);
    expect(f.aws.scheduler.deleteDirectly(triggerName('gone'), f.platform.config.scheduleGroup)).toBe(true);

    // Like LocalStack, whose Scheduler never fires: three slots pass without a fire.
    f.clock.jumpTo(first + 20 * MIN + 3 * MIN);
    await f.fire();
    const report = await f.platform.supervise();
    const expected = [first, first + 10 * MIN, first + 20 * MIN].map((slot) => runId('gone', slot));
    expect(report.fired).toEqual(expected);
    for (const id of expected) expect((await f.waitFor(id, ['succeeded'])).schedule).toBe('gone');
    expect((await f.platform.supervise()).fired).toEqual([]); // idempotent
    await sleepReal(500);
    expect(f.executions.map((e) => e.id).sort()).toEqual([...expected].sort());
  });

  it('and a Scheduler fire that arrives late for a slot the supervisor fired creates no second run', async () => {
    f = await startSchedulingFixture({ label: 'latefire' });
    await f.request('POST', '/schedules', { name: 'late', type: 'echo', payload: {}, cron: '* * * * *' });
    const slot = Date.parse((await f.request('GET', '/schedules/late')).body.nextFireAt);
    // The stand-in is held back (no fire on this jump); the supervisor fires the slot first.
    f.aws.scheduler.deleteDirectly(triggerName('late'), f.platform.config.scheduleGroup);
    f.clock.jumpTo(slot + 3 * MIN);
    expect((await f.platform.supervise()).fired).toEqual([runId('late', slot), runId('late', slot + MIN)]);
    await f.waitFor(runId('late', slot), ['succeeded']);
    // Now Scheduler's own (late) fire of the first slot arrives.
    await f.platform.clients.sqs.send(
      new SendMessageCommand({
        QueueUrl: f.platform.config.routes.echo?.queueUrl,
        MessageBody: JSON.stringify({
          v: 1,
          kind: 'fire',
          schedule: 'late',
          type: 'echo',
          scheduledTime: new Date(slot).toISOString().replace('.000Z', 'Z'),
        }),
      }),
    );
    await sleepReal(2_000);
    expect(f.executions.filter((e) => e.id === runId('late', slot))).toHaveLength(1);
    expect(await runsOf('late')).toHaveLength(2);
  });
});

describe('the /schedules API', () => {
  it('lists, reads, updates (the trigger too) and deletes (the trigger too) schedules', async () => {
    f = await startSchedulingFixture({ label: 'crud' });
    for (const name of ['b-report', 'a-report']) {
      expect(
        (await f.request('POST', '/schedules', { name, type: 'echo', payload: { name }, rate: '5 minutes' })).status,
      ).toBe(201);
    }
    const replay = await f.request('POST', '/schedules', {
      name: 'a-report',
      type: 'echo',
      payload: { name: 'a-report' },
      rate: 'rate(5 minutes)',
    });
    expect(replay.status).toBe(200);
    const conflict = await f.request('POST', '/schedules', {
      name: 'a-report',
      type: 'echo',
      payload: {},
      rate: '1 hour',
    });
    expect(conflict.status).toBe(409);

    const list = await f.request('GET', '/schedules?limit=1');
    expect(list.body.schedules.map((s: { name: string }) => s.name)).toEqual(['a-report']);
    const rest = await f.request('GET', `/schedules?limit=5&cursor=${list.body.nextCursor}`);
    expect(rest.body).toMatchObject({ nextCursor: null });
    expect(rest.body.schedules.map((s: { name: string }) => s.name)).toEqual(['b-report']);

    const updated = await f.request('PUT', '/schedules/a-report', {
      type: 'echo',
      payload: { changed: true },
      cron: '0 9 * * 1-5',
      timezone: 'Europe/Berlin',
      overlap: 'skip',
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({
      expression: 'cron(0 9 ? * 2-6 *)',
      timezone: 'Europe/Berlin',
      overlap: 'skip',
    });
    expect(f.schedules().find((s) => s.Name === triggerName('a-report'))).toMatchObject({
      ScheduleExpression: 'cron(0 9 ? * 2-6 *)',
      ScheduleExpressionTimezone: 'Europe/Berlin',
    });
    expect((await f.request('GET', '/schedules/a-report')).body.payload).toEqual({ changed: true });

    expect((await f.request('DELETE', '/schedules/a-report')).status).toBe(204);
    expect((await f.request('GET', '/schedules/a-report')).status).toBe(404);
    expect(f.schedules().find((s) => s.Name === triggerName('a-report'))).toBeUndefined();
    expect((await f.request('DELETE', '/schedules/a-report')).status).toBe(404);
    expect((await f.items()).some((i) => String(i.pk).startsWith('schedule#a-report'))).toBe(false);
  });

  it.each([
    ['an invalid cron', { cron: '61 * * * *' }, 'cron'],
    ['an invalid AWS cron', { cron: 'cron(0 10 * * * *)' }, 'cron'],
    ['an invalid time zone', { cron: '0 9 * * *', timezone: 'Europe/Gondor' }, 'timezone'],
    ['a rate of 0', { rate: '0 minutes' }, 'rate'],
    ['both cron and rate', { cron: '0 9 * * *', rate: '5 minutes' }, 'rate'],
    ['neither cron nor rate', {}, 'cron'],
    ['end before start', { rate: '1 hour', startAt: '2030-02-01T00:00:00Z', endAt: '2030-01-01T00:00:00Z' }, 'endAt'],
    ['a payload off the type schema', { rate: '1 hour', type: 'sleep', payload: { ms: 'long' } }, 'payload.ms'],
    ['an unknown job type', { rate: '1 hour', type: 'nope' }, 'type'],
    ['a bad name', { rate: '1 hour', name: '../etc' }, 'name'],
  ])('rejects %s with 400 naming the field, creating nothing', async (_label, change, path) => {
    f = await startSchedulingFixture({ label: 'badsched' });
    const response = await f.request('POST', '/schedules', { name: 'bad', type: 'echo', payload: {}, ...change });
    expect(response.status).toBe(400);
    expect(response.body.error.issues.map((i: { path: string }) => i.path)).toContain(path);
    expect((await f.request('GET', '/schedules')).body.schedules).toEqual([]);
    expect(f.schedules()).toEqual([]);
    expect(await f.items()).toEqual([]);
  });
});
