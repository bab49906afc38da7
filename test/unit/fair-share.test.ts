/**
 * Fair share between the keys of a limit (issue 28): the pure rule (`chooseFairKey`), the spec's
 * checks, the fair key computed at enqueue (400 `invalid_fair_key`, nothing written) and the slot
 * a job of a fair limit waits on. The line itself is in the flow-slots contract
 * (test/contract/flow-slots.contract.ts, "fair share").
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { allowEveryone } from '../../shared/api/access';
import { createApiHandler } from '../../shared/api/handler';
import { ManualClock } from '../../shared/core/clock';
import { chooseFairKey, fairWeight, MAX_FAIR_WEIGHT, runningByKey } from '../../shared/core/fair-share';
import { concurrencyProblem, resolveFlowKeys, slotsOf } from '../../shared/core/flow';
import { jobSlots } from '../../shared/core/job-slots';
import { defineJobType } from '../../shared/core/job-type';
import { lineRank } from '../../shared/core/priority';
import { createLogger } from '../../shared/logger';
import { callApi } from '../support/api-call';
import { FakeJobQueue, FakeJobScheduler, FakeJobStore, testConfig } from '../support/fakes';
import { FakeJobGraph } from '../support/graph-fakes';

describe('chooseFairKey', () => {
  const one = () => 1;

  it('picks the waiting key that runs fewest, whatever its backlog or age', () => {
    const holders = [{ fair: 'a' }, { fair: 'a' }, { fair: 'a' }, { fair: 'b' }];
    const waiting = [
      { key: 'a', waiting: 2000, since: 1 },
      { key: 'b', waiting: 20, since: 50 },
      { key: 'c', waiting: 1, since: 99 },
    ];
    expect(chooseFairKey({ holders, waiting, weightOf: one })).toBe('c');
    expect(chooseFairKey({ holders, waiting: waiting.slice(0, 2), weightOf: one })).toBe('b');
  });

  it('divides by weight, and breaks a tie by the longest wait, then the key', () => {
    const holders = [{ fair: 'a' }, { fair: 'a' }, { fair: 'b' }];
    const waiting = [
      { key: 'a', waiting: 5, since: 10 },
      { key: 'b', waiting: 5, since: 20 },
    ];
    // a runs 2 of weight 3 (0.67), b 1 of weight 1
    expect(chooseFairKey({ holders, waiting, weightOf: (k) => (k === 'a' ? 3 : 1) })).toBe('a');
    // equal shares: the one waiting since earlier
    expect(chooseFairKey({ holders, waiting, weightOf: (k) => (k === 'a' ? 2 : 1) })).toBe('a');
    expect(
      chooseFairKey({
        holders,
        waiting: waiting.map((w) => ({ ...w, since: 7 })),
        weightOf: (k) => (k === 'a' ? 2 : 1),
      }),
    ).toBe('a');
    expect(chooseFairKey({ holders: [], waiting: [], weightOf: one })).toBeUndefined();
    expect(
      chooseFairKey({ holders: [], waiting: [{ key: 'x', waiting: 0, since: 0 }], weightOf: one }),
    ).toBeUndefined();
  });

  it('always picks a key of least share among those waiting (property)', () => {
    const key = fc.constantFrom('a', 'b', 'c', 'd', 'e');
    fc.assert(
      fc.property(
        fc.array(key, { maxLength: 30 }),
        fc.uniqueArray(fc.record({ key, waiting: fc.integer({ min: 1, max: 9 }), since: fc.nat(100) }), {
          selector: (w) => w.key,
          minLength: 1,
        }),
        fc.dictionary(key, fc.integer({ min: 1, max: 5 })),
        (fair, waiting, weights) => {
          const holders = fair.map((f) => ({ fair: f }));
          const weightOf = (k: string) => weights[k] ?? 1;
          const chosen = chooseFairKey({ holders, waiting, weightOf });
          const running = runningByKey(holders);
          const share = (k: string) => (running.get(k) ?? 0) / weightOf(k);
          expect(waiting.map((w) => w.key)).toContain(chosen);
          for (const w of waiting) expect(share(chosen as string)).toBeLessThanOrEqual(share(w.key));
        },
      ),
    );
  });

  it('fairWeight takes the spec weight when usable, else 1', () => {
    expect(fairWeight(undefined, 'a')).toBe(1);
    expect(fairWeight(() => 2.5, 'a')).toBe(2.5);
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, MAX_FAIR_WEIGHT + 1]) {
      expect(fairWeight(() => bad, 'a')).toBe(1);
    }
    expect(
      fairWeight(() => {
        throw new Error('no');
      }, 'a'),
    ).toBe(1);
  });
});

describe('a fair limit in the spec', () => {
  const fairBy = (p: { t: string }) => p.t;

  it('refuses fairBy with key, two fair limits, a fair limit beside an unkeyed one, and a weight without fairBy', () => {
    expect(concurrencyProblem([{ limit: 2, fairBy: 'x' }])).toMatch(/fairBy must be a function/);
    expect(concurrencyProblem([{ limit: 2, fairBy, key: fairBy }])).toMatch(/both key and fairBy/);
    expect(
      concurrencyProblem([
        { limit: 2, fairBy },
        { limit: 3, fairBy },
      ]),
    ).toMatch(/two limits with fairBy/);
    expect(concurrencyProblem([{ limit: 2, fairBy }, { limit: 3 }])).toMatch(/two limits without a key/);
    expect(concurrencyProblem([{ limit: 2, weight: () => 1 }])).toMatch(/on a limit with fairBy/);
    expect(concurrencyProblem([{ limit: 2, fairBy, weight: 3 }])).toMatch(/weight must be a function/);
    expect(
      concurrencyProblem([
        { limit: 2, key: fairBy },
        { limit: 20, fairBy, weight: () => 2 },
      ]),
    ).toBeUndefined();
    expect(() =>
      defineJobType({
        type: 'bad',
        payload: z.object({ t: z.string() }),
        concurrency: [{ limit: 2, fairBy, key: fairBy }],
      }),
    ).toThrow(/both key and fairBy/);
  });

  it('stores the fair key in the limit’s place, and gives the job the type’s one slot with its fair key', () => {
    const limits = [
      { limit: 2, key: (p: { t: string }) => `k-${p.t}` },
      { limit: 20, fairBy, weight: () => 4 },
    ];
    const keys = resolveFlowKeys(limits as never, { t: 'acme' });
    expect(keys).toEqual(['k-acme', 'acme']);
    const [perKey, shared] = slotsOf('sync', limits as never, keys);
    expect(perKey).toEqual({ scope: 'sync#0', key: 'k-acme', limit: 2 });
    expect(shared).toMatchObject({ scope: 'sync#1', key: '*', limit: 20, fair: { key: 'acme' } });
    expect(shared?.fair?.weightOf('other')).toBe(4);
    // a job written before the type was fair: its key from its payload, as at enqueue
    const spec = defineJobType({ type: 'sync', payload: z.object({ t: z.string() }), concurrency: limits });
    const slots = jobSlots(spec, { payload: { t: 'zeta' }, flowKeys: ['*'] });
    expect(slots.map((s) => [s.key, s.fair?.key])).toEqual([
      ['k-zeta', undefined],
      ['*', 'zeta'],
    ]);
  });

  it('ranks a fair type’s jobs by due time when it has no priorities (oldest first within a key)', () => {
    const spec = { concurrency: [{ limit: 2, fairBy }] };
    const early = lineRank(spec, { id: 'b', runAt: '2026-01-01T00:00:00.000Z' });
    const late = lineRank(spec, { id: 'a', runAt: '2026-01-01T00:00:01.000Z' });
    expect(early).toBeDefined();
    expect((early as string) < (late as string)).toBe(true);
    expect(lineRank({ concurrency: [{ limit: 2 }] }, { id: 'a', runAt: '2026-01-01T00:00:00.000Z' })).toBeUndefined();
  });
});

describe('enqueue of a fair type', () => {
  const catalog = [
    defineJobType({
      type: 'fair',
      payload: z.record(z.string(), z.unknown()),
      concurrency: [
        {
          limit: 4,
          fairBy: (p: Record<string, unknown>) => {
            if (typeof p.tenant !== 'string') throw new Error('no tenant');
            return p.tenant;
          },
        },
      ],
    }),
  ];
  const store = new FakeJobStore();
  const api = createApiHandler({
    access: allowEveryone(),
    config: testConfig(['fair']),
    catalog,
    store,
    queue: new FakeJobQueue(),
    scheduler: new FakeJobScheduler(),
    clock: new ManualClock(Date.parse('2026-03-01T12:00:00.000Z')),
    logger: createLogger({ level: 'silent' }),
    graph: new FakeJobGraph(store),
  });
  const post = (body: unknown) => callApi(api, { method: 'POST', path: '/jobs', body });

  it('stores the fair key with the job, and refuses a payload it cannot be computed from: 400, nothing written', async () => {
    const ok = await post({ type: 'fair', payload: { tenant: 'acme' } });
    expect(ok.status).toBe(201);
    expect((await store.get(ok.body.id))?.flowKeys).toEqual(['acme']);
    const creates = store.calls.filter((c) => c.method === 'create').length;
    for (const payload of [{}, { tenant: '' }, { tenant: 'x'.repeat(300) }]) {
      const bad = await post({ type: 'fair', payload });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toMatchObject({ code: 'invalid_fair_key' });
      expect(JSON.stringify(bad.body.error)).toContain('concurrency[0].fairBy');
    }
    // a concurrencyKey names a keyed limit's value: a fair limit has none
    const keyed = await post({ type: 'fair', payload: { tenant: 'acme' }, concurrencyKey: 'x' });
    expect(keyed.body.error).toMatchObject({ code: 'invalid_concurrency_key' });
    expect(store.calls.filter((c) => c.method === 'create').length).toBe(creates);
  });
});
