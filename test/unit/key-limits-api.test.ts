/**
 * `PUT` and `DELETE /types/{type}/keys/{key}/limits` on the in-memory fakes: every bad field
 * answers 400 `invalid_limits` and nothing is written; a raise hands the new places to the
 * waiting jobs and sends their messages; `GET /types/{type}/keys/{key}` shows which limit holds.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { accessFrom } from '../../shared/api/access';
import { createApiHandler } from '../../shared/api/handler';
import { keyLimitsResponseSchema, keyStateSchema, typeKeysSchema } from '../../shared/api/schemas';
import { ManualClock } from '../../shared/core/clock';
import type { Slot } from '../../shared/core/flow';
import { defineJobType } from '../../shared/core/job-type';
import { createLogger } from '../../shared/logger';
import { FakeFlowSlots, FakePacer } from '../local-aws/memory-flow';
import { callApi } from '../support/api-call';
import { captureLogs, FakeJobQueue, FakeJobScheduler, FakeJobStore, testConfig } from '../support/fakes';

const T0 = Date.parse('2026-06-01T00:00:00.000Z');
const OPS = 'arn:aws:iam::123456789012:role/ops';
const READER = 'arn:aws:iam::123456789012:role/reader';

const tenantSync = defineJobType({
  type: 'tenant-sync',
  payload: z.object({ tenantId: z.string() }),
  concurrency: [{ limit: 2, key: (p) => p.tenantId }, { limit: 10 }],
});
const fairSync = defineJobType({
  type: 'fair-sync',
  payload: z.object({ tenantId: z.string() }),
  concurrency: [
    { limit: 2, key: (p) => p.tenantId },
    { limit: 4, fairBy: (p) => p.tenantId, weight: (k) => (k === 'gold' ? 2 : 1) },
  ],
});
const apiCall = defineJobType({
  type: 'api-call',
  payload: z.object({ apiKey: z.string() }),
  throttle: { limit: 5, periodSeconds: 1, burst: 5, key: (p) => p.apiKey },
  rateLimit: { limit: 100, periodSeconds: 60 },
});
const catalog = [
  tenantSync,
  fairSync,
  apiCall,
  defineJobType({ type: 'global', payload: z.object({}), concurrency: [{ limit: 3 }] }),
  defineJobType({ type: 'plain', payload: z.object({}) }),
];

function setup() {
  const flow = new FakeFlowSlots();
  const pacer = new FakePacer();
  const queue = new FakeJobQueue();
  const logs = captureLogs();
  const api = createApiHandler({
    access: accessFrom({
      v: 1,
      principals: {
        [OPS]: [{ action: 'operate' }, { action: 'read' }],
        [READER]: [{ action: 'read' }],
      },
    }),
    config: testConfig(['tenant-sync', 'fair-sync', 'api-call', 'global', 'plain']),
    catalog,
    store: new FakeJobStore(),
    queue,
    scheduler: new FakeJobScheduler(),
    clock: new ManualClock(T0),
    flow,
    pacer,
    logger: createLogger({ level: 'debug', sink: logs.sink }),
  });
  const call = (method: string, path: string, body?: unknown, as = OPS, query = '') =>
    callApi(api, { method, path, body, as, query });
  return { api, call, flow, pacer, queue, logs: logs.lines };
}

const slotOf = (key: string, index = 0, limit = 2): Slot => ({ scope: `tenant-sync#${index}`, key, limit });

describe('PUT /types/{type}/keys/{key}/limits', () => {
  it('sets the first keyed limit of the key, and answers the limits that hold, as GET shows them', async () => {
    const { call, flow } = setup();
    const put = await call('PUT', '/types/tenant-sync/keys/t1/limits', { concurrency: 5 });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({
      type: 'tenant-sync',
      key: 't1',
      handedOn: [],
      limits: [
        {
          index: 0,
          limit: 5,
          specLimit: 2,
          source: 'runtime',
          setBy: OPS,
          setAt: new Date(T0).toISOString(),
          key: 't1',
          running: [],
          waiting: 0,
          line: [],
        },
        { index: 1, limit: 10, specLimit: 10, source: 'spec', key: '*', running: [], waiting: 0, line: [] },
      ],
    });
    expect(flow.writes['set-limit']).toBe(1);
    const get = await call('GET', '/types/tenant-sync/keys/t1');
    expect(get.body.limits).toEqual(put.body.limits);
    // as OpenAPI documents them
    expect(keyLimitsResponseSchema.parse(put.body)).toEqual(put.body);
    expect(keyStateSchema.parse(get.body)).toEqual(get.body);
    // another key keeps the spec's
    expect((await call('GET', '/types/tenant-sync/keys/t2')).body.limits[0]).toMatchObject({
      limit: 2,
      source: 'spec',
    });
  });

  it('sets an unkeyed limit by its index, under the key *', async () => {
    const { call, flow } = setup();
    expect((await call('PUT', '/types/tenant-sync/keys/*/limits', { concurrency: 20, limit: 1 })).status).toBe(200);
    expect((await flow.state({ scope: 'tenant-sync#1', key: '*' })).runtimeLimit?.limit).toBe(20);
    expect((await call('PUT', '/types/global/keys/*/limits', { concurrency: 1 })).body.limits[0]).toMatchObject({
      limit: 1,
      specLimit: 3,
      source: 'runtime',
    });
  });

  it.each([
    ['a type without concurrency limits', 'plain', 'k', { concurrency: 2 }, 'concurrency'],
    ['a value of 0', 'tenant-sync', 't1', { concurrency: 0 }, 'concurrency'],
    ['a value above 1000', 'tenant-sync', 't1', { concurrency: 1001 }, 'concurrency'],
    ['a fraction', 'tenant-sync', 't1', { concurrency: 2.5 }, 'concurrency'],
    ['a string', 'tenant-sync', 't1', { concurrency: '3' }, 'concurrency'],
    ['no value', 'tenant-sync', 't1', {}, 'concurrency'],
    ['an index out of range', 'tenant-sync', 't1', { concurrency: 3, limit: 2 }, 'limit'],
    ['a negative index', 'tenant-sync', 't1', { concurrency: 3, limit: -1 }, 'limit'],
    ['a key other than * for an unkeyed limit', 'tenant-sync', 't1', { concurrency: 3, limit: 1 }, 'key'],
    ['a key with a control character', 'tenant-sync', 't%01x', { concurrency: 3 }, 'key'],
    ['a throttle (not settable yet)', 'tenant-sync', 't1', { concurrency: 3, throttle: 1 }, 'throttle'],
    ['a weight on a type without a limit shared fairly', 'tenant-sync', 't1', { weight: 2 }, 'weight'],
    ['a weight of 0', 'fair-sync', 'acme', { weight: 0 }, 'weight'],
    ['a weight above 1000', 'fair-sync', 'acme', { weight: 1001 }, 'weight'],
    ['a weight that is a string', 'fair-sync', 'acme', { weight: '2' }, 'weight'],
    ['a good weight beside a bad limit', 'fair-sync', 'acme', { weight: 2, concurrency: 0 }, 'concurrency'],
    ['a good limit beside a bad weight', 'fair-sync', 'acme', { weight: -1, concurrency: 3 }, 'weight'],
    ['an unknown field', 'tenant-sync', 't1', { concurrency: 3, limits: 1 }, 'limits'],
    ['a throttle on a type without one', 'tenant-sync', 't1', { throttle: { limit: 1, periodSeconds: 1 } }, 'throttle'],
    ['a throttle of 0', 'api-call', 'k1', { throttle: { limit: 0, periodSeconds: 1 } }, 'throttle'],
    ['a throttle with no period', 'api-call', 'k1', { throttle: { limit: 2 } }, 'throttle'],
    ['a throttle with a key', 'api-call', 'k1', { throttle: { limit: 2, periodSeconds: 1, key: 'x' } }, 'throttle'],
    [
      'a rate limit with a burst',
      'api-call',
      '*',
      { rateLimit: { limit: 2, periodSeconds: 1, burst: 2 } },
      'rateLimit',
    ],
    [
      'a rate limit on a key of a type whose rate limit has none',
      'api-call',
      'k1',
      { rateLimit: { limit: 2, periodSeconds: 1 } },
      'key',
    ],
    [
      'a good throttle beside a bad concurrency',
      'tenant-sync',
      't1',
      { concurrency: 0, throttle: { limit: 1, periodSeconds: 1 } },
      'throttle',
    ],
    ['a body that is not an object', 'tenant-sync', 't1', [3], '(body)'],
  ])(
    'answers 400 invalid_limits naming the field for %s, and writes nothing',
    async (_what, type, key, body, field) => {
      const { call, flow, pacer, queue } = setup();
      const response = await call('PUT', `/types/${type}/keys/${key}/limits`, body);
      expect(response.status).toBe(400);
      expect(response.body.error.code).toBe('invalid_limits');
      expect(response.body.error.issues.map((i: { path: string }) => i.path)).toEqual([field]);
      expect(flow.writes).toEqual({});
      expect(pacer.writes).toBe(0);
      expect(queue.sent).toEqual([]);
    },
  );

  it('answers 404 for an unknown type, and writes nothing', async () => {
    const { call, flow } = setup();
    const response = await call('PUT', '/types/nope/keys/k/limits', { concurrency: 3 });
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('type_not_found');
    expect(flow.writes).toEqual({});
  });

  it('needs operate: a caller granted only read gets 403 and nothing is written', async () => {
    const { call, flow } = setup();
    const response = await call('PUT', '/types/tenant-sync/keys/t1/limits', { concurrency: 3 }, READER);
    expect(response.status).toBe(403);
    expect(flow.writes).toEqual({});
  });

  it('a raise hands the new places to the waiting jobs at once and sends their messages', async () => {
    const { call, flow, queue, logs } = setup();
    const slot = slotOf('t1');
    for (const jobId of ['a', 'b', 'c', 'd', 'e']) {
      await flow.acquire({ slot, jobId, type: 'tenant-sync', now: T0, token: 1 });
    }
    expect((await flow.state(slot)).waiting).toBe(3);
    const put = await call('PUT', '/types/tenant-sync/keys/t1/limits', { concurrency: 4 });
    expect(put.body.handedOn).toEqual(['c', 'd']);
    expect(queue.sent.map((m) => m.message.id)).toEqual(['c', 'd']);
    expect(queue.sent[0]?.queueUrl).toContain('orrery-tenant-sync');
    expect(put.body.limits[0]).toMatchObject({ limit: 4, waiting: 1 });
    expect(put.body.limits[0].running.map((r: { jobId: string }) => r.jobId)).toEqual(['a', 'b', 'c', 'd']);
    // the audit: who changed which limit
    expect(logs).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          message: 'operator action',
          action: 'limits.set',
          by: OPS,
          type: 'tenant-sync',
          key: 't1',
        }),
        expect.objectContaining({ message: 'concurrency limit set', key: 't1', limit: 4, specLimit: 2, by: OPS }),
      ]),
    );
  });

  it('a lowered limit lets the holders finish and hands nothing on', async () => {
    const { call, flow, queue } = setup();
    const slot = slotOf('t1');
    for (const jobId of ['a', 'b', 'c']) await flow.acquire({ slot, jobId, type: 'tenant-sync', now: T0, token: 1 });
    const put = await call('PUT', '/types/tenant-sync/keys/t1/limits', { concurrency: 1 });
    expect(put.body.handedOn).toEqual([]);
    expect(put.body.limits[0]).toMatchObject({ limit: 1, waiting: 1 });
    expect(put.body.limits[0].running).toHaveLength(2);
    expect(queue.sent).toEqual([]);
  });
});

describe('DELETE /types/{type}/keys/{key}/limits', () => {
  it('removes the run-time limit: the spec holds again, and a spec above it hands places on', async () => {
    const { call, flow, queue } = setup();
    await call('PUT', '/types/tenant-sync/keys/t1/limits', { concurrency: 1 });
    const slot = slotOf('t1');
    for (const jobId of ['a', 'b']) await flow.acquire({ slot, jobId, type: 'tenant-sync', now: T0, token: 1 });
    const deleted = await call('DELETE', '/types/tenant-sync/keys/t1/limits');
    expect(deleted.status).toBe(200);
    expect(deleted.body.limits[0]).toMatchObject({ limit: 2, specLimit: 2, source: 'spec' });
    expect(deleted.body.limits[0]).not.toHaveProperty('setBy');
    expect(deleted.body.handedOn).toEqual(['b']);
    expect(queue.sent.map((m) => m.message.id)).toEqual(['b']);
  });

  it('takes ?limit= as the index, and refuses a bad one with 400 invalid_limits', async () => {
    const { call, flow } = setup();
    await call('PUT', '/types/tenant-sync/keys/*/limits', { concurrency: 20, limit: 1 });
    expect((await call('DELETE', '/types/tenant-sync/keys/*/limits', undefined, OPS, 'limit=1')).status).toBe(200);
    expect((await flow.state({ scope: 'tenant-sync#1', key: '*' })).runtimeLimit).toBeUndefined();
    const bad = await call('DELETE', '/types/tenant-sync/keys/*/limits', undefined, OPS, 'limit=x');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_limits', issues: [{ path: 'limit' }] });
  });
});

describe('fair share: weights set at run time, the keys of a type, and the line', () => {
  const fairSlot = (key: string): Slot => ({
    scope: 'fair-sync#1',
    key: '*',
    limit: 4,
    fair: { key, weightOf: (k) => (k === 'gold' ? 2 : 1) },
  });

  it("sets a fair key's weight, shows it beside the spec's, and removes it with ?field=weight", async () => {
    const { call, flow } = setup();
    const put = await call('PUT', '/types/fair-sync/keys/acme/limits', { weight: 3 });
    expect(put.status).toBe(200);
    expect(flow.writes).toEqual({ 'set-weight': 1 });
    expect((await flow.state(fairSlot('acme'))).fairWeights).toEqual({ acme: 3 });
    expect(put.body.limits[1]).toMatchObject({
      index: 1,
      key: '*',
      fair: { key: 'acme', weight: 3, weightSource: 'runtime', running: 0, waiting: 0 },
    });
    expect(keyLimitsResponseSchema.parse(put.body)).toEqual(put.body);
    // another key: the spec's weight
    expect((await call('GET', '/types/fair-sync/keys/gold')).body.limits[1].fair).toEqual({
      key: 'gold',
      weight: 2,
      weightSource: 'spec',
      running: 0,
      waiting: 0,
    });
    // both at once: one request, both set
    await call('PUT', '/types/fair-sync/keys/acme/limits', { weight: 5, concurrency: 1 });
    expect((await flow.state({ scope: 'fair-sync#0', key: 'acme' })).runtimeLimit?.limit).toBe(1);
    expect((await flow.state(fairSlot('acme'))).fairWeights).toEqual({ acme: 5 });
    const cleared = await call('DELETE', '/types/fair-sync/keys/acme/limits', undefined, OPS, 'field=weight');
    expect(cleared.status).toBe(200);
    expect(cleared.body.limits[1].fair).toMatchObject({ weight: 1, weightSource: 'spec' });
    // the concurrency limit stays until it is removed itself
    expect((await flow.state({ scope: 'fair-sync#0', key: 'acme' })).runtimeLimit?.limit).toBe(1);
    const bad = await call('DELETE', '/types/fair-sync/keys/acme/limits', undefined, OPS, 'field=bogus');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_limits', issues: [{ path: 'field' }] });
    const none = await call('DELETE', '/types/tenant-sync/keys/t1/limits', undefined, OPS, 'field=weight');
    expect(none.body.error).toMatchObject({ code: 'invalid_limits', issues: [{ path: 'weight' }] });
  });

  it("lists a fair limit's keys with their shares, and says a keyed limit's keys are not listed", async () => {
    const { call, flow } = setup();
    const join = (jobId: string, fair: string, rank: number) =>
      flow.acquire({
        slot: fairSlot(fair),
        jobId,
        type: 'fair-sync',
        now: T0,
        token: 1,
        rank: `${String(T0 + rank).padStart(15, '0')}#${jobId}`,
      });
    for (const [i, id] of ['a1', 'a2', 'a3', 'a4', 'a5'].entries()) await join(id, 'acme', i);
    await join('g1', 'gold', 10);
    await call('PUT', '/types/fair-sync/keys/zeta/limits', { weight: 4 });
    const listed = await call('GET', '/types/fair-sync/keys');
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      type: 'fair-sync',
      limits: [
        { index: 0, keyed: true, keys: [] },
        {
          index: 1,
          keyed: false,
          fair: true,
          limit: 4,
          running: 4,
          waiting: 2,
          keys: [
            { key: 'acme', weight: 1, weightSource: 'spec', running: 4, waiting: 1 },
            { key: 'gold', weight: 2, weightSource: 'spec', running: 0, waiting: 1 },
            { key: 'zeta', weight: 4, weightSource: 'runtime', running: 0, waiting: 0 },
          ],
        },
      ],
    });
    expect(typeKeysSchema.parse(listed.body)).toEqual(listed.body);
    // the asked key's own line, first served first, with the time each rank stands for
    const acme = await call('GET', '/types/fair-sync/keys/acme');
    expect(acme.body.limits[1].line).toEqual([{ jobId: 'a5', rankedAt: new Date(T0 + 4).toISOString() }]);
    expect(acme.body.limits[1].fair).toMatchObject({ running: 4, waiting: 1 });
    expect(keyStateSchema.parse(acme.body)).toEqual(acme.body);
    const reader = await call('GET', '/types/fair-sync/keys', undefined, READER);
    expect(reader.status).toBe(200);
    expect((await call('GET', '/types/nope/keys')).status).toBe(404);
  });
});

describe('throttles and rate limits set at run time', () => {
  it("sets a key's throttle in place of the spec's, from its next turn, shows it, and removes it", async () => {
    const { call, pacer } = setup();
    const put = await call('PUT', '/types/api-call/keys/k1/limits', { throttle: { limit: 1, periodSeconds: 10 } });
    expect(put.status).toBe(200);
    expect(put.body.throttle).toMatchObject({
      key: 'k1',
      limit: 1,
      periodSeconds: 10,
      burst: 1,
      source: 'runtime',
      specLimit: 5,
      specPeriodSeconds: 1,
      setBy: OPS,
    });
    expect(keyLimitsResponseSchema.parse(put.body)).toEqual(put.body);
    // the worker's next turns, with the spec's pace as it passes it: one per 10 s now
    const spec = { intervalMs: 200, toleranceMs: 800 };
    const turns = [];
    for (let i = 0; i < 3; i++)
      turns.push((await pacer.takeTurn({ scope: 'api-call~t', key: 'k1', now: T0, pace: spec })) - T0);
    expect(turns).toEqual([0, 10_000, 20_000]);
    // another key keeps the spec's
    expect((await call('GET', '/types/api-call/keys/k2')).body.throttle).toMatchObject({ limit: 5, source: 'spec' });
    const got = await call('GET', '/types/api-call/keys/k1');
    expect(got.body.throttle).toMatchObject({
      limit: 1,
      source: 'runtime',
      nextStartAt: new Date(T0 + 30_000).toISOString(),
    });
    expect(keyStateSchema.parse(got.body)).toEqual(got.body);
    const cleared = await call('DELETE', '/types/api-call/keys/k1/limits', undefined, OPS, 'field=throttle');
    expect(cleared.status).toBe(200);
    expect(cleared.body.throttle).toMatchObject({ limit: 5, periodSeconds: 1, source: 'spec' });
    expect(await pacer.runtimePace({ scope: 'api-call~t', key: 'k1' })).toBeUndefined();
  });

  it("sets the rate limit of a type's one key (*), and refuses to remove one from a type without", async () => {
    const { call, pacer } = setup();
    const put = await call('PUT', '/types/api-call/keys/*/limits', { rateLimit: { limit: 1000, periodSeconds: 60 } });
    expect(put.body.rateLimit).toMatchObject({ key: '*', limit: 1000, source: 'runtime', specLimit: 100 });
    expect(await pacer.runtimePace({ scope: 'api-call~r', key: '*' })).toMatchObject({
      limit: 1000,
      periodSeconds: 60,
    });
    const bad = await call('DELETE', '/types/tenant-sync/keys/t1/limits', undefined, OPS, 'field=rateLimit');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_limits', issues: [{ path: 'rateLimit' }] });
  });
});
