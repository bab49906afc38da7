import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type ApiAccess, accessFrom } from '../../shared/api/access';
import { createApiHandler } from '../../shared/api/handler';
import { OPERATIONS } from '../../shared/api/openapi';
import type { Grant, GrantsDocument } from '../../shared/core/access';
import { ManualClock } from '../../shared/core/clock';
import type { JobIndex } from '../../shared/core/control-ports';
import { defineJobType } from '../../shared/core/job-type';
import { ACCESS_METRIC } from '../../shared/core/metrics';
import type { JobStore } from '../../shared/core/ports';
import { createLogger } from '../../shared/logger';
import { FakeJournal } from '../local-aws/memory-journal';
import { FakeRecurringTrigger, FakeScheduleStore } from '../local-aws/memory-schedules';
import { FakeDeadLetterQueues, FakeJobControl, FakeRedriveLog } from '../support/control-fakes';
import { FakeJobQueue, FakeJobScheduler, FakeJobStore, MemoryMetrics, newJob, testConfig } from '../support/fakes';

const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const ACCOUNT = '123456789012';
const role = (name: string) => `arn:aws:iam::${ACCOUNT}:role/${name}`;
const session = (name: string) => `arn:aws:sts::${ACCOUNT}:assumed-role/${name}/s1`;
const catalog = ['echo', 'mail', 'sms'].map((type) =>
  defineJobType({ type, payload: z.record(z.string(), z.unknown()) }),
);

function setup(
  grants: Record<string, readonly Grant[]>,
  options: {
    access?: ApiAccess;
    /**
     * Job id → the type the first read of it answers (the access check's), as if the job had been
     * another job of the same id a moment before; later reads see the job as it is.
     */
    stale?: Record<string, string>;
    /** The same for schedules: name → the type the first read answers. */
    staleSchedules?: Record<string, string>;
  } = {},
) {
  const document: GrantsDocument = { v: 1, principals: grants };
  const inner = new FakeJobStore();
  let gets = 0;
  const store = new Proxy(inner, {
    get(target, name, receiver) {
      if (name === 'get') {
        gets++;
        return async (id: string) => {
          const job = await target.get(id);
          const type = options.stale?.[id];
          if (options.stale) delete options.stale[id];
          return job && type !== undefined ? { ...job, type } : job;
        };
      }
      return Reflect.get(target, name, receiver);
    },
  }) as JobStore;
  const index: JobIndex = { query: async () => ({ entries: [], more: false }) };
  const schedules = new FakeScheduleStore();
  // the first read of a schedule named in `staleSchedules` answers that type (the check's read)
  const scheduleStore = new Proxy(schedules, {
    get(target, name, receiver) {
      if (name !== 'get') return Reflect.get(target, name, receiver);
      return async (scheduleName: string) => {
        const schedule = await target.get(scheduleName);
        const type = options.staleSchedules?.[scheduleName];
        if (options.staleSchedules) delete options.staleSchedules[scheduleName];
        return schedule && type !== undefined ? { ...schedule, type } : schedule;
      };
    },
  });
  const metrics = new MemoryMetrics();
  const api = createApiHandler({
    access: options.access ?? accessFrom(document),
    config: testConfig(['echo', 'mail', 'sms']),
    catalog,
    store,
    queue: new FakeJobQueue(),
    scheduler: new FakeJobScheduler(),
    clock: new ManualClock(T0),
    logger: createLogger({ level: 'silent' }),
    metrics,
    controlPlane: {
      index,
      control: new FakeJobControl(inner),
      deadLetters: new FakeDeadLetterQueues(),
      redrives: new FakeRedriveLog(),
    },
    journal: new FakeJournal(),
    schedules: { store: scheduleStore, trigger: new FakeRecurringTrigger() },
  });
  const call = async (as: string | undefined, method: string, path: string, body?: unknown, query = {}) => {
    const response = await api({
      version: '2.0',
      rawPath: path,
      rawQueryString: new URLSearchParams(query).toString(),
      headers: { 'content-type': 'application/json' },
      ...(Object.keys(query).length > 0 ? { queryStringParameters: query } : {}),
      requestContext: {
        http: { method, path },
        requestId: 'r',
        ...(as ? { authorizer: { iam: { accountId: ACCOUNT, userArn: as } } } : {}),
      },
      isBase64Encoded: false,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    } as unknown as APIGatewayProxyEventV2);
    return { status: response.statusCode, body: JSON.parse(response.body ?? 'null') };
  };
  const seed = async (id: string, type: string) => {
    await inner.create(newJob({ id, type, expiresAt: Math.floor(T0 / 1000) + 86_400 }, T0));
  };
  return { call, store: inner, seed, metrics, gets: () => gets, schedules };
}

describe('the API access check', () => {
  it('refuses every route but /openapi.json to a principal with no grant, writing nothing', async () => {
    const { call, store } = setup({});
    for (const op of OPERATIONS) {
      const path = op.path.replace(/\{[^}]+\}/g, 'x1');
      const response = await call(session('nobody'), op.method.toUpperCase(), path, { type: 'echo', payload: {} });
      if (op.path === '/openapi.json') {
        expect(response.status, `${op.method} ${op.path}`).toBe(200);
        continue;
      }
      expect(response.status, `${op.method} ${op.path}`).toBe(403);
      expect(response.body.error.code).toBe('forbidden');
      expect(response.body.error.message).toContain(session('nobody'));
    }
    expect(await store.get('x1')).toBeUndefined();
  });

  it('gives a call with no IAM identity nothing, even when unlisted principals are admin', async () => {
    const { call } = setup({}, { access: accessFrom({ v: 1, principals: {}, unlisted: [{ action: 'admin' }] }) });
    const response = await call(undefined, 'GET', '/jobs/a');
    expect(response.status).toBe(403);
    expect(response.body.error).toMatchObject({ code: 'forbidden', action: 'read' });
    expect((await call(session('any'), 'GET', '/jobs/a')).status).toBe(404);
  });

  it('refuses a batch with one type not granted, naming it, and writes none of its jobs', async () => {
    const { call, store, metrics } = setup({ [role('billing')]: [{ action: 'enqueue', types: ['echo'] }] });
    const response = await call(session('billing'), 'POST', '/jobs/batch', {
      jobs: [
        { id: 'b1', type: 'echo', payload: {} },
        { id: 'b2', type: 'mail', payload: {} },
      ],
    });
    expect(response.status).toBe(403);
    expect(response.body.error).toMatchObject({ code: 'forbidden', action: 'enqueue', type: 'mail' });
    expect(response.body.error.message).toMatch(/enqueue is not granted on job type "mail"/);
    expect(await store.get('b1')).toBeUndefined();
    expect(metrics.values(ACCESS_METRIC.forbidden, 'mail')).toEqual([1]);
    const ok = await call(session('billing'), 'POST', '/jobs', { id: 'b3', type: 'echo', payload: {} });
    expect(ok.status).toBe(201);
  });

  it('reads the job type on an id route only for a grant scoped by type', async () => {
    const scoped = setup({ [role('ops')]: [{ action: 'control', types: ['echo'], actions: ['cancel'] }] });
    await scoped.seed('e1', 'echo');
    await scoped.seed('m1', 'mail');
    const denied = await scoped.call(session('ops'), 'POST', '/jobs/m1/cancel');
    expect(denied.status).toBe(403);
    expect(denied.body.error).toMatchObject({ action: 'control', control: 'cancel', type: 'mail' });
    expect((await scoped.store.get('m1'))?.state).toBe('queued');
    expect((await scoped.call(session('ops'), 'POST', '/jobs/e1/retry')).status).toBe(403);
    const before = scoped.gets();
    expect((await scoped.call(session('ops'), 'POST', '/jobs/e1/cancel')).status).toBe(200);
    expect(scoped.gets() - before).toBe(1);

    const wide = setup({ [role('ops')]: [{ action: 'control' }] });
    await wide.seed('e1', 'echo');
    expect((await wide.call(session('ops'), 'POST', '/jobs/e1/cancel')).status).toBe(200);
    expect(wide.gets()).toBe(0);
  });

  it('conditions the control write on the granted types: a job whose type changed after the check is refused, unchanged', async () => {
    // The check reads the job's type, then the write acts: were the job another one of the same
    // id by then (deleted and enqueued again, of another type), the write must not touch it.
    const stale = { m1: 'echo', m2: 'echo', m3: 'echo' };
    const grants = { [role('ops')]: [{ action: 'control' as const, types: ['echo'] }] };
    const { call, seed, store } = setup(grants, { stale });
    await seed('m1', 'mail');
    const cancel = await call(session('ops'), 'POST', '/jobs/m1/cancel');
    expect(cancel.status).toBe(403);
    expect(cancel.body.error).toMatchObject({ code: 'forbidden', action: 'control', control: 'cancel', type: 'mail' });
    expect((await store.get('m1'))?.state).toBe('queued');

    store.seed(
      newJob(
        {
          id: 'm2',
          type: 'mail',
          state: 'failed',
          finishedAt: new Date(T0).toISOString(),
          expiresAt: T0 / 1000 + 86_400,
        },
        T0,
      ),
    );
    const retry = await call(session('ops'), 'POST', '/jobs/m2/retry');
    expect(retry.status).toBe(403);
    expect(retry.body.error).toMatchObject({ code: 'forbidden', action: 'control', control: 'retry', type: 'mail' });
    expect((await store.get('m2'))?.state).toBe('failed');

    await seed('m3', 'mail');
    const bulk = await call(session('ops'), 'POST', '/jobs/bulk', { action: 'cancel', ids: ['m3'] });
    expect(bulk.status).toBe(200);
    expect(bulk.body.results).toEqual([{ id: 'm3', status: 'forbidden' }]);
    expect((await store.get('m3'))?.state).toBe('queued');
  });

  it('gives a bulk call the types every grant it needs covers, not the last one checked', async () => {
    // bulk is granted on echo and mail, cancel on mail and sms: a bulk cancel may act on mail only
    const stale: Record<string, string> = { s1: 'mail' };
    const grants = {
      [role('ops')]: [
        { action: 'control' as const, types: ['echo', 'mail'], actions: ['bulk' as const] },
        { action: 'control' as const, types: ['mail', 'sms'], actions: ['cancel' as const] },
      ],
    };
    const { call, seed, store } = setup(grants, { stale });
    await seed('s1', 'sms');
    const bulk = await call(session('ops'), 'POST', '/jobs/bulk', { action: 'cancel', ids: ['s1'] });
    expect(bulk.body.results).toEqual([{ id: 's1', status: 'forbidden' }]);
    expect((await store.get('s1'))?.state).toBe('queued');
  });

  it("reads and signals only within the granted types, on the route's own read of the job", async () => {
    // as above: the check's read found the granted type, the route's own read finds another
    const stale: Record<string, string> = { m1: 'echo' };
    const grants = {
      [role('desk')]: [
        { action: 'read' as const, types: ['echo'] },
        { action: 'signal' as const, types: ['echo'] },
      ],
      [role('root')]: [{ action: 'admin' as const }],
    };
    const { call, seed } = setup(grants, { stale });
    await seed('m1', 'mail');
    const read = await call(session('desk'), 'GET', '/jobs/m1');
    expect(read.status).toBe(403);
    expect(read.body.error).toMatchObject({ code: 'forbidden', action: 'read', type: 'mail' });
    expect(JSON.stringify(read.body)).not.toContain('"payload"');
    stale.m1 = 'echo';
    const signal = await call(session('desk'), 'POST', '/jobs/m1/signals/go', { payload: { n: 1 } });
    expect(signal.status).toBe(403);
    expect(signal.body.error).toMatchObject({ code: 'forbidden', action: 'signal', type: 'mail' });
    // the admin's signal is the first one (202, not a replay's 200): the refused one stored nothing
    expect((await call(session('root'), 'POST', '/jobs/m1/signals/go', { payload: { n: 1 } })).status).toBe(202);
  });

  it("shows a schedule only within the granted types, on the route's own read of it", async () => {
    const grants = {
      [role('viewer')]: [{ action: 'read' as const, types: ['echo'] }],
      [role('root')]: [{ action: 'admin' as const }],
    };
    const staleSchedules: Record<string, string> = {};
    const { call } = setup(grants, { staleSchedules });
    expect(
      (await call(session('root'), 'POST', '/schedules', { name: 'n1', type: 'mail', payload: {}, cron: '0 3 * * *' }))
        .status,
    ).toBe(201);
    staleSchedules.n1 = 'echo';
    const read = await call(session('viewer'), 'GET', '/schedules/n1');
    expect(read.status).toBe(403);
    expect(read.body.error).toMatchObject({ code: 'forbidden', action: 'read', type: 'mail' });
  });

  it('checks bulk as control (bulk) and its action, on the type of every job it names', async () => {
    const { call, seed, store } = setup({ [role('ops')]: [{ action: 'control', types: ['echo'] }] });
    await seed('e1', 'echo');
    await seed('m1', 'mail');
    const denied = await call(session('ops'), 'POST', '/jobs/bulk', { action: 'cancel', ids: ['e1', 'm1'] });
    expect(denied.status).toBe(403);
    expect(denied.body.error).toMatchObject({ action: 'control', control: 'bulk', type: 'mail' });
    expect((await store.get('e1'))?.state).toBe('queued');
    const ok = await call(session('ops'), 'POST', '/jobs/bulk', { action: 'cancel', ids: ['e1'] });
    expect(ok.body.results).toEqual([{ id: 'e1', status: 'applied', state: 'cancelled' }]);
  });

  it('makes a reader scoped by type name a granted type to list jobs', async () => {
    const { call } = setup({ [role('viewer')]: [{ action: 'read', types: ['echo'] }] });
    const all = await call(session('viewer'), 'GET', '/jobs');
    expect(all.status).toBe(403);
    expect(all.body.error.message).toMatch(/read is granted only on job types "echo"; name them/);
    expect((await call(session('viewer'), 'GET', '/jobs', undefined, { type: 'echo' })).status).toBe(200);
    expect((await call(session('viewer'), 'GET', '/jobs', undefined, { type: 'mail' })).body.error.type).toBe('mail');
  });

  it('loads the grants once per handler, and again after a failed load (503)', async () => {
    let loads = 0;
    const access: ApiAccess = {
      grants: {
        load: async () => {
          loads++;
          if (loads === 1) throw new Error('parameter store down');
          return { v: 1, principals: { [role('r')]: [{ action: 'read' }] } };
        },
      },
    };
    const { call } = setup({}, { access });
    expect((await call(session('r'), 'GET', '/jobs/a')).status).toBe(503);
    expect((await call(session('r'), 'GET', '/jobs/a')).status).toBe(404);
    expect((await call(session('r'), 'GET', '/jobs/b')).status).toBe(404);
    expect(loads).toBe(2);
  });
});
