import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { catalog } from '../../functions/jobs/catalog';
import { defineEvent, eventCatalog, eventJobId, isEventJobId, planEvent, subscribe } from '../../shared/core/events';
import { defineJobType } from '../../shared/core/job-type';
import { JOB_ID_PATTERN } from '../../shared/core/limits';
import { safeParse } from '../../shared/core/zod-mini';
import { ConfigError, ValidationError } from '../../shared/errors';

const placed = defineEvent('order.placed', z.object({ orderId: z.string() }));

describe('defineEvent and subscriptions', () => {
  it('refuses a name outside the pattern', () => {
    expect(() => defineEvent('has space', z.object({}))).toThrow(ConfigError);
    expect(() => defineEvent('x'.repeat(129), z.object({}))).toThrow(/up to 128/);
    expect(defineEvent('a:b.c_d-e', z.object({})).name).toBe('a:b.c_d-e');
  });

  it('refuses a job type that subscribes to one event twice, or to something not made with defineEvent', () => {
    const base = { type: 'receipt', payload: z.object({ orderId: z.string() }) };
    expect(() => defineJobType({ ...base, on: [subscribe(placed), subscribe(placed)] })).toThrow(/twice/);
    expect(() => defineJobType({ ...base, on: [{ event: { name: 'x' } } as never] })).toThrow(/defineEvent/);
    expect(() => defineJobType({ ...base, on: [{ event: placed, filter: 1 } as never] })).toThrow(
      /filter must be a function/,
    );
  });

  it('refuses a job type that declares a signal under an event wait’s reserved name', () => {
    // POST /jobs/{id}/signals/event:… refuses it (400 reserved_signal) and ctx.waitForSignal
    // fails the job: a type declaring one could never get it, which its definition should say
    const base = { type: 'receipt', payload: z.object({ orderId: z.string() }) };
    expect(() => defineJobType({ ...base, signals: { 'event:paid': z.object({}) } })).toThrow(/event:/);
    expect(defineJobType({ ...base, signals: { 'events-paid': z.object({}) } }).signals).toHaveProperty('events-paid');
  });

  it('refuses two definitions of one event name in a catalog', () => {
    const other = defineEvent('order.placed', z.object({ orderId: z.number() }));
    const a = defineJobType({ type: 'a', payload: z.object({}).loose(), on: [subscribe(placed)] });
    const b = defineJobType({ type: 'b', payload: z.object({}).loose(), on: [subscribe(other)] });
    expect(() => eventCatalog([a, b])).toThrow(/defined twice \(job types a and b\)/);
  });

  it('refuses two definitions of one event name that share a schema but not their matchOn', () => {
    // which one the catalog kept decided whether the event is recorded for waits: taken the one
    // without matchOn, no wait would ever get it, and nothing said so
    const schema = z.object({ orderId: z.string() });
    const plain = defineEvent('order.paid', schema);
    const matched = defineEvent('order.paid', schema, { matchOn: ['orderId'] });
    const a = defineJobType({ type: 'a', payload: z.object({}).loose(), on: [subscribe(plain)] });
    const b = defineJobType({ type: 'b', payload: z.object({}).loose(), waitsFor: [matched] });
    expect(() => eventCatalog([a, b])).toThrow(/defined twice \(job types a and b\)/);
    expect(() => eventCatalog([b, a])).toThrow(/defined twice/);
    // the same schema and the same matchOn in two definitions is one event
    const again = defineEvent('order.paid', schema, { matchOn: ['orderId'] });
    const c = defineJobType({ type: 'c', payload: z.object({}).loose(), on: [subscribe(again)] });
    expect(eventCatalog([b, c]).get('order.paid')?.definition.matchOn).toEqual(['orderId']);
  });
});

describe('eventJobId', () => {
  it('is a valid job id whatever the lengths, the same for the same event and type, and differs otherwise', () => {
    const long = eventJobId('n'.repeat(128), 'e'.repeat(64), 't'.repeat(40));
    expect(long).toMatch(JOB_ID_PATTERN);
    expect(isEventJobId(long)).toBe(true);
    expect(long.length).toBe(43);
    expect(eventJobId('a.b', 'e1', 'a')).toBe(eventJobId('a.b', 'e1', 'a'));
    expect(eventJobId('a.b', 'e1', 'a')).not.toBe(eventJobId('a.b', 'e1', 'b'));
    expect(eventJobId('a.b', 'e1', 'a')).not.toBe(eventJobId('a.b', 'e2', 'a'));
    // two events sent under one id are two events
    expect(eventJobId('a.b', 'e1', 'a')).not.toBe(eventJobId('a.c', 'e1', 'a'));
    // the parts are kept apart: no two triples that join to the same text share an id
    expect(eventJobId('x', 'ab', 'c')).not.toBe(eventJobId('x', 'a', 'bc'));
    expect(isEventJobId('ev.123')).toBe(false);
  });
});

describe('planEvent', () => {
  const catalog = eventCatalog([
    defineJobType({
      type: 'throws-filter',
      payload: z.object({}).loose(),
      on: [
        subscribe(placed, {
          filter: () => {
            throw new Error('boom');
          },
        }),
      ],
    }),
  ]);

  it('a filter or payload function that throws is a 400 invalid_event_data naming the data', () => {
    let caught: unknown;
    try {
      planEvent(catalog, { name: 'order.placed', id: 'e', data: { orderId: 'o' } }, 'events.2');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ValidationError);
    expect(caught).toMatchObject({ code: 'invalid_event_data', status: 400 });
    expect((caught as ValidationError).issues).toEqual([
      { path: 'events.2.data', message: 'the throws-filter subscription could not take it: boom' },
    ]);
  });

  it('passes the data as parsed by the event schema (defaults applied, unknown keys stripped)', () => {
    const withDefault = defineEvent('with.default', z.object({ n: z.number().default(7) }));
    const cat = eventCatalog([
      defineJobType({ type: 'takes', payload: z.object({ n: z.number() }), on: [subscribe(withDefault)] }),
    ]);
    expect(planEvent(cat, { name: 'with.default', id: 'e', data: { extra: 1 } })).toEqual([
      { type: 'takes', id: eventJobId('with.default', 'e', 'takes'), payload: { n: 7 }, asData: true },
    ]);
  });
});

describe("the repository's catalog (npm run dev)", () => {
  it('user.signed-up makes a welcome-email and an account-sync job, each payload valid for its type', () => {
    const jobs = planEvent(eventCatalog(catalog), {
      name: 'user.signed-up',
      id: 'signup-u1',
      data: { userId: 'u1', email: 'ada@example.com' },
    });
    expect(jobs.map((j) => [j.type, j.payload])).toEqual([
      ['account-sync', { accountId: 'u1' }],
      ['welcome-email', { userId: 'u1', to: 'ada@example.com' }],
    ]);
    for (const job of jobs) {
      const spec = catalog.find((s) => s.type === job.type);
      expect(safeParse(spec?.payload as never, job.payload).success, job.type).toBe(true);
    }
  });
});
