import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { toScheduleItem } from '../../shared/aws/dynamo-schedule-store';
import { itemBytes } from '../../shared/aws/job-item';
import { ManualClock } from '../../shared/core/clock';
import { defineJobType } from '../../shared/core/job-type';
import { DependencyError, type OrreryError } from '../../shared/errors';
import { createLogger } from '../../shared/logger';
import type { Schedule } from '../../shared/schedules/model';
import { SchedulesService, triggerDefinition } from '../../shared/schedules/service';
import { testConfig } from '../support/fakes';
import { FakeRecurringTrigger, FakeScheduleStore } from '../support/scheduling-fakes';

const NOW = Date.parse('2026-03-01T12:00:20.000Z');
const report = defineJobType({
  type: 'report',
  payload: z.object({ day: z.string() }).strict(),
  retry: { maxAttempts: 4 },
});

function setup() {
  const schedules = new FakeScheduleStore();
  const trigger = new FakeRecurringTrigger();
  const clock = new ManualClock(NOW);
  const service = new SchedulesService({
    config: testConfig(['report']),
    catalog: [report],
    schedules,
    trigger,
    clock,
    log: createLogger({ level: 'silent' }),
  });
  return { schedules, trigger, clock, service };
}

const nightly = { name: 'nightly', type: 'report', payload: { day: 'today' }, cron: '0 2 * * *' };

async function rejection(promise: Promise<unknown>): Promise<OrreryError> {
  try {
    await promise;
  } catch (error) {
    return error as OrreryError;
  }
  throw new Error('expected a rejection');
}

describe('SchedulesService.create', () => {
  it('stores the schedule and its payload, then creates its trigger', async () => {
    const h = setup();
    const { created, schedule } = await h.service.create(nightly);
    expect(created).toBe(true);
    expect(schedule).toMatchObject({
      name: 'nightly',
      expression: 'cron(0 2 * * ? *)',
      timezone: 'UTC',
      maxAttempts: 4,
      overlap: 'allow',
      state: 'enabled',
      nextFireAt: '2026-03-02T02:00:00.000Z',
      payload: { day: 'today' },
    });
    expect(h.schedules.payloads.get('nightly')?.payload).toEqual({ day: 'today' });
    expect(h.trigger.triggers.get('nightly')).toMatchObject({
      expression: 'cron(0 2 * * ? *)',
      enabled: true,
      queueArn: 'arn:aws:sqs:eu-west-1:123456789012:orrery-report',
    });
  });

  it('answers a replay of the same definition with the schedule, and a different one with 409', async () => {
    const h = setup();
    await h.service.create(nightly);
    expect((await h.service.create(nightly)).created).toBe(false);
    const conflict = await rejection(h.service.create({ ...nightly, cron: '0 3 * * *' }));
    expect(conflict.status).toBe(409);
    expect(conflict.code).toBe('schedule_exists');
  });

  it.each([
    ['an invalid cron', { cron: '0 25 * * *' }, 'cron'],
    ['an invalid time zone', { timezone: 'Europe/Atlantis' }, 'timezone'],
    ['a rate of 0', { cron: undefined, rate: '0 minutes' }, 'rate'],
    ['end before start', { startAt: '2026-05-01T00:00:00Z', endAt: '2026-04-01T00:00:00Z' }, 'endAt'],
    ['an unknown type', { type: 'nope' }, 'type'],
    ['a payload off its schema', { payload: { day: 3 } }, 'payload.day'],
  ])('rejects %s with 400 naming %s, and writes nothing', async (_label, change, path) => {
    const h = setup();
    const error = await rejection(h.service.create({ ...nightly, ...change }));
    expect(error.status).toBe(400);
    expect(error.issues?.map((i) => i.path)).toContain(path);
    expect(h.schedules.schedules.size).toBe(0);
    expect(h.trigger.triggers.size).toBe(0);
  });

  it('keeps the schedule when its trigger cannot be created (503): a replay puts the trigger, the supervisor fires meanwhile', async () => {
    const h = setup();
    h.trigger.failNext(new DependencyError('Scheduler is down'));
    const error = await rejection(h.service.create(nightly));
    expect(error.status).toBe(503);
    expect(h.schedules.schedules.size).toBe(1);
    expect(h.trigger.triggers.size).toBe(0);
    const replay = await h.service.create(nightly);
    expect(replay.created).toBe(false);
    expect(h.trigger.triggers.has('nightly')).toBe(true);
  });

  it('a create whose trigger write fails never removes a schedule a concurrent replay already answered for', async () => {
    const h = setup();
    // The first try's trigger write hangs, then fails; a replay meanwhile finds the schedule and
    // answers 200. Removing the schedule on the first try's failure would lose an acknowledged one.
    let fail: (error: Error) => void = () => {};
    h.trigger.putHook = () => new Promise<void>((_, reject) => (fail = reject));
    const first = rejection(h.service.create(nightly));
    await new Promise((resolve) => setTimeout(resolve, 10));
    h.trigger.putHook = undefined;
    expect((await h.service.create(nightly)).created).toBe(false);
    fail(new DependencyError('Scheduler timed out'));
    expect((await first).status).toBe(503);
    expect(await h.schedules.get('nightly')).toBeDefined();
  });
});

describe('SchedulesService: pause, resume, update, delete, list', () => {
  it('pause disables the trigger and stops firing; resume fires from the next slot after now', async () => {
    const h = setup();
    await h.service.create({ ...nightly, cron: '0 * * * *' });
    const paused = await h.service.pause('nightly');
    expect(paused).toMatchObject({ state: 'paused', nextFireAt: null });
    expect(h.trigger.triggers.get('nightly')?.enabled).toBe(false);
    expect((await h.schedules.get('nightly'))?.dueAt).toBeUndefined();

    h.clock.advance(5 * 3600_000); // five fires pass while paused: not caught up
    const resumed = await h.service.resume('nightly');
    expect(resumed).toMatchObject({ state: 'enabled', nextFireAt: '2026-03-01T18:00:00.000Z' });
    expect(h.trigger.triggers.get('nightly')?.enabled).toBe(true);
  });

  it('update replaces the definition and keeps counters; the name cannot change', async () => {
    const h = setup();
    await h.service.create(nightly);
    const stored = await h.schedules.get('nightly');
    h.schedules.schedules.set('nightly', { ...(stored as NonNullable<typeof stored>), skipped: 3 });
    const updated = await h.service.update('nightly', {
      ...nightly,
      name: undefined,
      rate: '2 hours',
      cron: undefined,
      overlap: 'skip',
    });
    expect(updated).toMatchObject({ expression: 'rate(2 hours)', cron: null, overlap: 'skip', skipped: { count: 3 } });
    expect(h.trigger.triggers.get('nightly')?.expression).toBe('rate(2 hours)');
    const renamed = await rejection(h.service.update('nightly', { ...nightly, name: 'other' }));
    expect(renamed.issues?.[0]?.path).toBe('name');
    const missing = await rejection(h.service.update('ghost', { ...nightly, name: 'ghost' }));
    expect(missing.status).toBe(404);
  });

  it('delete removes the schedule and its trigger; a second delete is 404', async () => {
    const h = setup();
    await h.service.create(nightly);
    await h.service.delete('nightly');
    expect(h.schedules.schedules.size).toBe(0);
    expect(h.trigger.triggers.size).toBe(0);
    expect((await rejection(h.service.delete('nightly'))).status).toBe(404);
  });

  it('lists by name with a cursor', async () => {
    const h = setup();
    for (const name of ['c', 'a', 'b']) await h.service.create({ ...nightly, name });
    const first = await h.service.list({ limit: '2' });
    expect(first.schedules.map((s) => s.name)).toEqual(['a', 'b']);
    expect(first.nextCursor).toBe('b');
    const second = await h.service.list({ limit: '2', cursor: 'b' });
    expect(second).toMatchObject({ nextCursor: null });
    expect(second.schedules.map((s) => s.name)).toEqual(['c']);
    expect((await rejection(h.service.list({ limit: '0' }))).issues?.[0]?.path).toBe('limit');
  });
});

describe('SchedulesService: who changed a schedule', () => {
  const alice = 'arn:aws:sts::123456789012:assumed-role/ops/alice';
  const bob = 'arn:aws:iam::123456789012:role/oncall';

  /** Counts the store's writes, to show the record rides on the change's own write. */
  function counted(h: ReturnType<typeof setup>) {
    const writes = { create: 0, save: 0 };
    const create = h.schedules.create.bind(h.schedules);
    const save = h.schedules.save.bind(h.schedules);
    h.schedules.create = (...args) => {
      writes.create += 1;
      return create(...args);
    };
    h.schedules.save = (...args) => {
      writes.save += 1;
      return save(...args);
    };
    return writes;
  }

  it('records the caller, the action and the time of each change, in the write that makes it', async () => {
    const h = setup();
    const writes = counted(h);
    const { schedule } = await h.service.create(nightly, alice);
    expect(schedule.changedBy).toEqual({ action: 'create', by: alice, at: new Date(NOW).toISOString() });
    expect(h.schedules.schedules.get('nightly')?.changedBy).toEqual(schedule.changedBy);
    expect(writes).toEqual({ create: 1, save: 0 });

    h.clock.advance(60_000);
    const paused = await h.service.pause('nightly', bob);
    expect(paused.changedBy).toEqual({ action: 'pause', by: bob, at: new Date(NOW + 60_000).toISOString() });
    expect(writes).toEqual({ create: 1, save: 1 });

    h.clock.advance(60_000);
    expect((await h.service.resume('nightly', alice)).changedBy).toMatchObject({ action: 'resume', by: alice });
    h.clock.advance(60_000);
    const updated = await h.service.update('nightly', { ...nightly, cron: '0 3 * * *' }, bob);
    expect(updated.changedBy).toEqual({ action: 'update', by: bob, at: new Date(NOW + 180_000).toISOString() });
    expect(writes).toEqual({ create: 1, save: 3 });
    expect((await h.service.get('nightly')).changedBy).toEqual(updated.changedBy);
  });

  it('a replayed create keeps the first creator; a change without a caller keeps the earlier record', async () => {
    const h = setup();
    await h.service.create(nightly, alice);
    const replay = await h.service.create(nightly, bob);
    expect(replay).toMatchObject({ created: false, schedule: { changedBy: { action: 'create', by: alice } } });
    await h.service.pause('nightly');
    expect((await h.service.get('nightly')).changedBy).toMatchObject({ action: 'create', by: alice });
    // a schedule created without a caller has no record
    const other = await h.service.create({ ...nightly, name: 'other' });
    expect(other.schedule).not.toHaveProperty('changedBy');
  });

  it('adds the record to the schedule item without another write unit for a typical name, role and session', async () => {
    const h = setup();
    const name = 'nightly-billing-report';
    await h.service.create(
      { ...nightly, name, timezone: 'Europe/Berlin' },
      'arn:aws:sts::123456789012:assumed-role/billing-service/i-0123456789abcdef0',
    );
    const stored = h.schedules.schedules.get(name) as Schedule;
    // a fired schedule carries its run bookkeeping too: the item every fire rewrites
    const fired: Schedule = {
      ...stored,
      lastFireAt: NOW,
      lastRunId: `${name}-2026-03-02T02:00:00Z`,
      lastRunReservedAt: NOW,
      lastRunConfirmUntil: NOW,
      lastRunAfter: `${name}-2026-03-01T02:00:00Z`,
      skipped: 12345,
      lastSkippedAt: NOW,
      missed: 12,
    };
    const without = { ...fired };
    delete without.changedBy;
    const units = (schedule: Schedule) => Math.ceil(itemBytes(toScheduleItem(schedule)) / 1024);
    expect(itemBytes(toScheduleItem(fired)) - itemBytes(toScheduleItem(without))).toBeGreaterThan(100);
    expect(units(fired)).toBe(units(without));
    expect(units(fired)).toBe(1);
  });
});

describe('triggerDefinition', () => {
  it('starts a rate trigger at its next slot, so Scheduler fires on the same grid', async () => {
    const h = setup();
    await h.service.create({ ...nightly, cron: undefined, rate: '5 minutes' });
    const schedule = await h.schedules.get('nightly');
    if (!schedule) throw new Error('no schedule');
    const definition = triggerDefinition(schedule, 'arn:q', NOW);
    expect(definition.startDate).toBe(Date.parse('2026-03-01T12:01:00Z'));
    expect(definition.startDate).toBe(schedule.nextFireAt);
  });

  it('passes a cron startAt only while it is not in the past', async () => {
    const h = setup();
    await h.service.create({ ...nightly, startAt: '2026-03-05T00:00:00Z' });
    const schedule = await h.schedules.get('nightly');
    if (!schedule) throw new Error('no schedule');
    expect(triggerDefinition(schedule, 'arn:q', NOW).startDate).toBe(Date.parse('2026-03-05T00:00:00Z'));
    expect(triggerDefinition(schedule, 'arn:q', Date.parse('2026-03-06T00:00:00Z')).startDate).toBeUndefined();
  });
});

describe('SchedulesService.create and payload references', () => {
  it("refuses a payload shaped like an offloaded value's reference: its runs would read the object it names", async () => {
    const loose = defineJobType({ type: 'loose', payload: z.looseObject({}) });
    const schedules = new FakeScheduleStore();
    const service = new SchedulesService({
      config: testConfig(['loose']),
      catalog: [loose],
      schedules,
      trigger: new FakeRecurringTrigger(),
      clock: new ManualClock(NOW),
      log: createLogger({ level: 'silent' }),
    });
    const lookalike = { $orreryBlob: 1, key: 'p/someone-else/secret', bytes: 1 };
    const refused = await rejection(
      service.create({ name: 'peek', type: 'loose', payload: lookalike, cron: '0 2 * * *' }),
    );
    expect({ status: refused.status, code: refused.code }).toEqual({ status: 400, code: 'invalid_payload' });
    expect(schedules.payloads.size).toBe(0);
  });
});
