/**
 * A job's priority, through every way a job is made (issue 28): `POST /jobs`, its batch, a flow,
 * a `dependsOn` child, a recurring schedule's fires and its run-now. A type with the `priority`
 * option stores the request's value, else its default; a type without it stores none and refuses
 * one; a bad value is refused. Every refusal is 400 `invalid_priority` naming the field, and
 * writes nothing. On the API handler over the in-memory ports.
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { allowEveryone } from '../../shared/api/access';
import { createApiHandler } from '../../shared/api/handler';
import { fromScheduleItem, toScheduleItem } from '../../shared/aws/dynamo-schedule-store';
import { toItem } from '../../shared/aws/job-item';
import { ManualClock } from '../../shared/core/clock';
import type { Job } from '../../shared/core/job';
import { defineJobType } from '../../shared/core/job-type';
import { createLogger } from '../../shared/logger';
import { processFire } from '../../shared/schedules/fire-processor';
import type { Schedule } from '../../shared/schedules/model';
import { FakeJobQueue, FakeJobScheduler, FakeJobStore, testConfig } from '../support/fakes';
import { FakeJobGraph } from '../support/graph-fakes';
import { FakeRecurringTrigger, FakeScheduleStore } from '../support/scheduling-fakes';

const NOW = Date.parse('2026-03-01T12:00:20.000Z');
const anyPayload = z.record(z.string(), z.unknown());

const catalog = [
  defineJobType({ type: 'plain', payload: anyPayload }),
  defineJobType({ type: 'ranked', payload: anyPayload, concurrency: [{ limit: 2 }], priority: { default: 3 } }),
];

function setup() {
  const config = testConfig(['plain', 'ranked']);
  const store = new FakeJobStore();
  const queue = new FakeJobQueue();
  const schedules = { store: new FakeScheduleStore(), trigger: new FakeRecurringTrigger() };
  const clock = new ManualClock(NOW);
  const api = createApiHandler({
    access: allowEveryone(),
    config,
    catalog,
    store,
    queue,
    scheduler: new FakeJobScheduler(),
    clock,
    logger: createLogger({ level: 'silent' }),
    graph: new FakeJobGraph(store),
    schedules,
  });
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await api({
      version: '2.0',
      routeKey: '$default',
      rawPath: path,
      rawQueryString: '',
      headers: { 'content-type': 'application/json' },
      requestContext: { http: { method, path }, requestId: 'req-1' },
      isBase64Encoded: false,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    } as unknown as APIGatewayProxyEventV2);
    return { status: response.statusCode, body: JSON.parse(response.body ?? 'null') };
  };
  /** How many job items the store was asked to create. */
  const creates = () => store.calls.filter((c) => c.method === 'create').length;
  return { call, store, queue, schedules, clock, creates };
}

/** The refusal every bad priority gets: 400 `invalid_priority`, its one issue on `path`. */
function refusedOn(path: string) {
  return { error: { code: 'invalid_priority', issues: [{ path, message: expect.any(String) }] } };
}

describe('POST /jobs', () => {
  it('stores the priority given, on a type with the option', async () => {
    const h = setup();
    const response = await h.call('POST', '/jobs', { id: 'r1', type: 'ranked', payload: {}, priority: 9 });
    expect(response.status).toBe(201);
    expect(response.body.priority).toBe(9);
    expect(h.store.peek('r1')?.priority).toBe(9);
    expect(toItem(h.store.peek('r1') as Job).priority).toEqual({ N: '9' });
  });

  it("gives the type's default when the request gives none, and 0 is a priority, not a missing one", async () => {
    const h = setup();
    await h.call('POST', '/jobs', { id: 'r1', type: 'ranked', payload: {} });
    await h.call('POST', '/jobs', { id: 'r0', type: 'ranked', payload: {}, priority: 0 });
    expect(h.store.peek('r1')?.priority).toBe(3);
    expect(h.store.peek('r0')?.priority).toBe(0);
    expect((await h.call('GET', '/jobs/r1')).body.priority).toBe(3);
  });

  it('stores no priority attribute for a type without the option', async () => {
    const h = setup();
    const response = await h.call('POST', '/jobs', { id: 'p1', type: 'plain', payload: {} });
    expect(response.status).toBe(201);
    expect(response.body).not.toHaveProperty('priority');
    const job = h.store.peek('p1');
    expect(job).not.toHaveProperty('priority');
    expect(toItem(job as Job)).not.toHaveProperty('priority');
  });

  it('refuses a priority on a type without the option: 400 invalid_priority on priority, nothing written', async () => {
    const h = setup();
    const response = await h.call('POST', '/jobs', { id: 'p1', type: 'plain', payload: {}, priority: 1 });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject(refusedOn('priority'));
    expect(response.body.error.message).toMatch(/no priority option/);
    expect(h.creates()).toBe(0);
    expect(h.queue.sent).toEqual([]);
  });

  it.each([[11], [-1], [2.5], ['5'], [null], [true], [[5]], [{ value: 5 }]])(
    'refuses priority %j: 400 invalid_priority on priority, nothing written',
    async (priority) => {
      const h = setup();
      const response = await h.call('POST', '/jobs', { id: 'r1', type: 'ranked', payload: {}, priority });
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject(refusedOn('priority'));
      expect(h.creates()).toBe(0);
      expect(h.queue.sent).toEqual([]);
    },
  );

  it('accepts 0 and 10, the bounds', async () => {
    const h = setup();
    expect((await h.call('POST', '/jobs', { type: 'ranked', payload: {}, priority: 0 })).status).toBe(201);
    expect((await h.call('POST', '/jobs', { type: 'ranked', payload: {}, priority: 10 })).status).toBe(201);
  });

  it('answers a replay with another priority as it answers one with another concurrencyKey: the stored job, unchanged', async () => {
    const h = setup();
    await h.call('POST', '/jobs', { id: 'r1', type: 'ranked', payload: { a: 1 }, priority: 2 });
    const replay = await h.call('POST', '/jobs', { id: 'r1', type: 'ranked', payload: { a: 1 }, priority: 8 });
    expect(replay.status).toBe(200);
    expect(replay.body.priority).toBe(2);
    expect(h.store.peek('r1')?.priority).toBe(2);
    // a replay without one keeps it too (the type's default is not applied over it)
    const bare = await h.call('POST', '/jobs', { id: 'r1', type: 'ranked', payload: { a: 1 } });
    expect(bare.status).toBe(200);
    expect(bare.body.priority).toBe(2);
    // the priority is checked before the replay is found, as every field is: a bad one is a 400
    const bad = await h.call('POST', '/jobs', { id: 'r1', type: 'ranked', payload: { a: 1 }, priority: 99 });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_priority');
  });

  it('gives a dependsOn child its priority, or the default, while it waits for its parents', async () => {
    const h = setup();
    await h.call('POST', '/jobs', { id: 'parent', type: 'plain', payload: {} });
    const child = await h.call('POST', '/jobs', {
      id: 'child',
      type: 'ranked',
      payload: {},
      priority: 7,
      dependsOn: ['parent'],
    });
    expect(child.status).toBe(201);
    expect(child.body).toMatchObject({ state: 'waiting', priority: 7 });
    expect(h.store.peek('child')?.priority).toBe(7);
    const defaulted = await h.call('POST', '/jobs', {
      id: 'child-2',
      type: 'ranked',
      payload: {},
      dependsOn: ['parent'],
    });
    expect(defaulted.body.priority).toBe(3);
  });

  it('refuses a priority on a dependsOn child of a type without the option, and writes nothing', async () => {
    const h = setup();
    await h.call('POST', '/jobs', { id: 'parent', type: 'plain', payload: {} });
    const before = h.creates();
    const response = await h.call('POST', '/jobs', {
      id: 'child',
      type: 'plain',
      payload: {},
      priority: 1,
      dependsOn: ['parent'],
    });
    expect(response.body).toMatchObject(refusedOn('priority'));
    expect(h.creates()).toBe(before);
    expect(h.store.peek('child')).toBeUndefined();
  });
});

describe('POST /jobs/batch', () => {
  it('stores each item its priority or default, and refuses a bad one as that item error (path priority)', async () => {
    const h = setup();
    const response = await h.call('POST', '/jobs/batch', {
      jobs: [
        { id: 'b0', type: 'ranked', payload: {}, priority: 6 },
        { id: 'b1', type: 'ranked', payload: {} },
        { id: 'b2', type: 'plain', payload: {}, priority: 6 },
        { id: 'b3', type: 'ranked', payload: {}, priority: 12 },
        { id: 'b4', type: 'plain', payload: {} },
      ],
    });
    expect(response.status).toBe(200);
    const results = response.body.results;
    expect(results.map((r: { status: string }) => r.status)).toEqual([
      'created',
      'created',
      'error',
      'error',
      'created',
    ]);
    // a batch names an item by its index; the paths of its issues are the item's own fields
    expect(results[2]).toMatchObject({ index: 2, ...refusedOn('priority') });
    expect(results[3]).toMatchObject({ index: 3, ...refusedOn('priority') });
    expect(h.store.peek('b0')?.priority).toBe(6);
    expect(h.store.peek('b1')?.priority).toBe(3);
    expect(h.store.peek('b2')).toBeUndefined();
    expect(h.store.peek('b3')).toBeUndefined();
    expect(h.store.peek('b4')).not.toHaveProperty('priority');
    expect(h.store.calls.filter((c) => c.method === 'create').map((c) => c.id)).toEqual(['b0', 'b1', 'b4']);
  });
});

describe('POST /flows', () => {
  it('stores each job of the flow its priority, or its type default', async () => {
    const h = setup();
    const response = await h.call('POST', '/flows', {
      id: 'f1',
      jobs: [
        { id: 'extract', type: 'plain', payload: {} },
        { id: 'urgent', type: 'ranked', payload: {}, priority: 10, dependsOn: ['extract'] },
        { id: 'usual', type: 'ranked', payload: {}, dependsOn: ['extract'] },
      ],
    });
    expect(response.status).toBe(201);
    expect(h.store.peek('urgent')?.priority).toBe(10);
    expect(h.store.peek('usual')?.priority).toBe(3);
    expect(h.store.peek('extract')).not.toHaveProperty('priority');
  });

  it.each([
    ['a type without the option', { type: 'plain', priority: 2 }],
    ['a value out of range', { type: 'ranked', priority: 11 }],
  ])('refuses the whole flow for %s: 400 invalid_priority on jobs.1.priority, nothing written', async (_label, bad) => {
    const h = setup();
    const response = await h.call('POST', '/flows', {
      id: 'f1',
      jobs: [
        { id: 'a', type: 'ranked', payload: {}, priority: 1 },
        { id: 'b', payload: {}, ...bad, dependsOn: ['a'] },
      ],
    });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject(refusedOn('jobs.1.priority'));
    expect(h.creates()).toBe(0);
    expect(h.store.all()).toEqual([]);
  });
});

describe('recurring schedules', () => {
  const every = { type: 'ranked', payload: { report: 'daily' }, rate: '5 minutes' };

  /** Fires schedule `name` at its next fire time, as the worker does; the run it created. */
  async function fire(h: ReturnType<typeof setup>, name: string) {
    const schedule = h.schedules.store.schedules.get(name);
    const fireTime = schedule?.nextFireAt as number;
    const deps = {
      schedules: h.schedules.store,
      jobs: h.store,
      log: createLogger({ level: 'silent' }),
      retentionMs: 0,
    };
    const result = await processFire(deps, { name, type: schedule?.type as string, fireTime }, fireTime);
    expect(result.kind).toBe('run');
    return h.store.peek(result.kind === 'run' ? result.message.id : '');
  }

  it('stores the priority of its runs, or the type default, and each fire makes a run of it', async () => {
    const h = setup();
    const given = await h.call('POST', '/schedules', { ...every, name: 'urgent', priority: 8 });
    expect(given.status).toBe(201);
    expect(given.body.priority).toBe(8);
    const defaulted = await h.call('POST', '/schedules', { ...every, name: 'usual' });
    expect(defaulted.body.priority).toBe(3);
    expect((await fire(h, 'urgent'))?.priority).toBe(8);
    expect((await fire(h, 'usual'))?.priority).toBe(3);
  });

  it('makes runs without a priority for a type without the option', async () => {
    const h = setup();
    const created = await h.call('POST', '/schedules', { ...every, type: 'plain', name: 'plain' });
    expect(created.status).toBe(201);
    expect(created.body).not.toHaveProperty('priority');
    expect(h.schedules.store.schedules.get('plain')).not.toHaveProperty('priority');
    expect(await fire(h, 'plain')).not.toHaveProperty('priority');
  });

  it.each([
    ['a type without the option', { type: 'plain', priority: 1 }],
    ['a value out of range', { priority: 11 }],
    ['a value that is not an integer', { priority: 'high' }],
  ])('refuses %s at create and update: 400 invalid_priority on priority, nothing written', async (_label, bad) => {
    const h = setup();
    const create = await h.call('POST', '/schedules', { ...every, name: 'nightly', ...bad });
    expect(create.status).toBe(400);
    expect(create.body).toMatchObject(refusedOn('priority'));
    expect(h.schedules.store.schedules.size).toBe(0);
    expect(h.schedules.trigger.triggers.size).toBe(0);

    await h.call('POST', '/schedules', { ...every, name: 'nightly', priority: 4 });
    const before = h.schedules.store.schedules.get('nightly');
    const update = await h.call('PUT', '/schedules/nightly', { ...every, ...bad });
    expect(update.status).toBe(400);
    expect(update.body).toMatchObject(refusedOn('priority'));
    expect(h.schedules.store.schedules.get('nightly')).toEqual(before);
  });

  it('changes the priority on update (its default again when the update gives none), and a replay with another is a 409', async () => {
    const h = setup();
    await h.call('POST', '/schedules', { ...every, name: 'nightly', priority: 4 });
    const conflict = await h.call('POST', '/schedules', { ...every, name: 'nightly', priority: 5 });
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.code).toBe('schedule_exists');
    expect((await h.call('POST', '/schedules', { ...every, name: 'nightly', priority: 4 })).status).toBe(200);

    expect((await h.call('PUT', '/schedules/nightly', { ...every, priority: 9 })).body.priority).toBe(9);
    expect((await fire(h, 'nightly'))?.priority).toBe(9);
    // PUT replaces the whole definition: without a priority, the type's default
    expect((await h.call('PUT', '/schedules/nightly', every)).body.priority).toBe(3);
  });

  it('keeps the priority in the DynamoDB schedule item', async () => {
    const h = setup();
    await h.call('POST', '/schedules', { ...every, name: 'nightly', priority: 6 });
    const schedule = h.schedules.store.schedules.get('nightly') as Schedule;
    const item = toScheduleItem(schedule);
    expect(item.priority).toEqual({ N: '6' });
    expect(fromScheduleItem(item).priority).toBe(6);
  });

  it("runs now with the schedule's priority", async () => {
    const h = setup();
    await h.call('POST', '/schedules', { ...every, name: 'nightly', priority: 6 });
    const run = await h.call('POST', '/schedules/nightly/run', { id: 'now-1' });
    expect(run.status).toBe(201);
    expect(run.body.job.priority).toBe(6);
    expect(h.store.peek('now-1')?.priority).toBe(6);
  });
});
