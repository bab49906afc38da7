/**
 * The grants matrix (who may do what), shared by the target it runs on: local AWS
 * (test/integration/access-grants.test.ts, a platform of its own) and the deployed stack
 * (test/deployed/grants-matrix.test.ts, the app synthesized with these callers). For each grant, a
 * principal (its own credentials, an assumed role with a session) calls every route: allowed
 * calls succeed; every other call answers 403 `forbidden` naming the action (and the type), and
 * an admin reads back that nothing was written.
 *
 * Every job it makes waits (a delay, or a runAt an hour on), and every schedule fires once a year,
 * so nothing runs while the matrix reads it back, on a target whose workers run.
 */
import { expect } from 'vitest';
import { type RequestSigner, sigV4Signer } from '../../shared/client/signing';
import { CALLERS, type Who } from './grants-callers';

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

export interface Answer {
  status: number;
  body: Record<string, unknown> & { error?: Record<string, unknown> };
}

/** Where the matrix runs: the API, who the admin is, and a way to put a message in a DLQ. */
export interface MatrixTarget {
  /** The API's base URL, without a trailing slash. */
  url: string;
  region: string;
  /** Credentials granted admin on the API: they set up and read back. */
  admin: Credentials;
  sendToDlq(type: string, body: string): Promise<void>;
}

/** The matrix's calls against one target. */
export function matrixOn(target: MatrixTarget) {
  let seq = 0;
  /** A payload each job type's schema takes. */
  const payloadFor = (type: string) => (type === 'flaky' ? { failTimes: 0 } : {});
  const uid = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++seq}`;
  /** Jobs wait a quarter of an hour: none runs while the matrix looks at it. */
  const WAIT = { delaySeconds: 900 };
  const later = () => ({ runAt: new Date(Date.now() + 3_600_000).toISOString() });
  /** Its schedules fire once a year (January 1st): none fires while the suite runs, even by the supervisor. */
  const YEARLY = { cron: '0 0 1 1 *' };

  /** One signer per credentials (the client's SigV4 signer, service `lambda`, as for a Function URL). */
  const signers = new Map<string, RequestSigner>();
  const signerOf = (credentials: Credentials): RequestSigner => {
    let signer = signers.get(credentials.accessKeyId);
    if (!signer) {
      signer = sigV4Signer({ region: target.region, credentials });
      signers.set(credentials.accessKeyId, signer);
    }
    return signer;
  };

  /** A request signed with `credentials`. */
  async function request(credentials: Credentials, method: string, path: string, body?: unknown): Promise<Answer> {
    const url = new URL(`${target.url}${path}`);
    const text = body === undefined ? undefined : JSON.stringify(body);
    const headers = await signerOf(credentials)({
      method,
      url,
      headers: text === undefined ? {} : { 'content-type': 'application/json' },
      body: text,
    });
    const response = await fetch(url, { method, headers, ...(text === undefined ? {} : { body: text }) });
    const raw = await response.text();
    return { status: response.status, body: raw ? JSON.parse(raw) : {} };
  }
  const admin = (method: string, path: string, body?: unknown) => request(target.admin, method, path, body);
  async function adminOk(method: string, path: string, body?: unknown) {
    const response = await admin(method, path, body);
    if (response.status >= 300)
      throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(response.body)}`);
    return response.body;
  }
  const newJob = async (type: string, extra: Record<string, unknown> = WAIT) =>
    (await adminOk('POST', '/jobs', { id: uid(type), type, payload: payloadFor(type), ...extra })).id as string;
  const stateOf = async (id: string) => (await admin('GET', `/jobs/${id}`)).body.state;
  const absent = async (id: string) => expect((await admin('GET', `/jobs/${id}`)).status).toBe(404);

  /** One route as a principal calls it: what it sets up, the call, and the read-back that nothing was written. */
  interface Case {
    name: string;
    allowed: readonly Who[];
    /** The job type a 403 names, when one is to blame. */
    deniedType?: string;
    run(as: Credentials): Promise<Answer>;
    /** After a 403: nothing was written. */
    unchanged?: () => Promise<void>;
    /** After a success: what the call did. */
    applied?: (body: Record<string, unknown>) => void | Promise<void>;
  }

  function cases(): Case[] {
    const list: Case[] = [];
    const enqueueCase = (name: string, allowed: Who[], deniedType: string | undefined, types: string[]) => {
      let ids: string[] = [];
      list.push({
        name,
        allowed,
        ...(deniedType ? { deniedType } : {}),
        async run(as) {
          ids = types.map((type) => uid(type));
          if (types.length === 1)
            return request(as, 'POST', '/jobs', {
              id: ids[0],
              type: types[0],
              payload: payloadFor(types[0] as string),
              ...WAIT,
            });
          return request(as, 'POST', '/jobs/batch', {
            jobs: types.map((type, i) => ({ id: ids[i], type, payload: payloadFor(type), ...WAIT })),
          });
        },
        unchanged: async () => {
          for (const id of ids) await absent(id);
        },
        applied: async () => {
          for (const id of ids) expect(await stateOf(id)).toBe('queued');
        },
      });
    };
    enqueueCase('POST /jobs echo', ['enqueue', 'enqueueEcho', 'admin'], undefined, ['echo']);
    enqueueCase('POST /jobs flaky', ['enqueue', 'admin'], 'flaky', ['flaky']);
    enqueueCase('POST /jobs/batch echo+echo', ['enqueue', 'enqueueEcho', 'admin'], undefined, ['echo', 'echo']);
    enqueueCase('POST /jobs/batch echo+flaky (mixed)', ['enqueue', 'admin'], 'flaky', ['echo', 'flaky']);

    {
      let ids: string[] = [];
      list.push({
        name: 'POST /flows echo → flaky (mixed)',
        allowed: ['enqueue', 'admin'],
        deniedType: 'flaky',
        async run(as) {
          ids = [uid('fe'), uid('ff')];
          return request(as, 'POST', '/flows', {
            id: uid('flow'),
            jobs: [
              { id: ids[0], type: 'echo', payload: {}, ...WAIT },
              { id: ids[1], type: 'flaky', payload: payloadFor('flaky'), dependsOn: [ids[0]] },
            ],
          });
        },
        unchanged: async () => {
          for (const id of ids) await absent(id);
        },
        applied: async () => {
          expect(await stateOf(ids[0] as string)).toBe('queued');
        },
      });
    }
    {
      let id = '';
      list.push({
        name: 'POST /jobs/{echo}/signals/go',
        allowed: ['signal', 'admin'],
        deniedType: 'echo',
        async run(as) {
          id = await newJob('echo');
          return request(as, 'POST', `/jobs/${id}/signals/go`, { payload: { n: 1 } });
        },
        // the admin's signal is the first one: a stored signal would make it a replay (200)
        unchanged: async () =>
          expect((await admin('POST', `/jobs/${id}/signals/go`, { payload: { n: 1 } })).status).toBe(202),
        applied: async () =>
          expect((await admin('POST', `/jobs/${id}/signals/go`, { payload: { n: 1 } })).status).toBe(200),
      });
    }
    const controlCase = (
      name: string,
      allowed: Who[],
      deniedType: string | undefined,
      type: string,
      what: 'cancel' | 'retry',
    ) => {
      let id = '';
      list.push({
        name,
        allowed,
        ...(deniedType ? { deniedType } : {}),
        async run(as) {
          id = await newJob(type, later());
          if (what === 'retry') await adminOk('POST', `/jobs/${id}/cancel`);
          return request(as, 'POST', `/jobs/${id}/${what}`);
        },
        unchanged: async () => expect(await stateOf(id)).toBe(what === 'cancel' ? 'scheduled' : 'cancelled'),
        applied: (body) => expect(body.state).toBe(what === 'cancel' ? 'cancelled' : 'queued'),
      });
    };
    controlCase('POST /jobs/{echo}/cancel', ['controlEcho', 'admin'], 'echo', 'echo', 'cancel');
    controlCase('POST /jobs/{flaky}/cancel', ['admin'], 'flaky', 'flaky', 'cancel');
    // retried, the job runs now: a failing flaky on a target whose workers run is harmless (it succeeds)
    controlCase('POST /jobs/{echo}/retry', ['admin'], undefined, 'echo', 'retry');
    const bulkCase = (name: string, allowed: Who[], deniedType: string | undefined, types: string[]) => {
      let ids: string[] = [];
      list.push({
        name,
        allowed,
        ...(deniedType ? { deniedType } : {}),
        async run(as) {
          ids = [];
          for (const type of types) ids.push(await newJob(type, later()));
          return request(as, 'POST', '/jobs/bulk', { action: 'cancel', ids });
        },
        unchanged: async () => {
          for (const id of ids) expect(await stateOf(id)).toBe('scheduled');
        },
        applied: (body) =>
          expect((body.results as { status: string }[]).map((r) => r.status)).toEqual(types.map(() => 'applied')),
      });
    };
    bulkCase('POST /jobs/bulk cancel [echo]', ['controlEcho', 'admin'], undefined, ['echo']);
    bulkCase('POST /jobs/bulk cancel [echo, flaky] (mixed)', ['admin'], 'flaky', ['echo', 'flaky']);
    list.push({
      name: 'POST /dlq/redrive sleep',
      allowed: ['operate', 'admin'],
      async run(as) {
        // a dead letter of a job that does not exist: redriven, the worker drops it
        await target.sendToDlq('sleep', JSON.stringify({ v: 1, id: uid('dl'), type: 'sleep' }));
        return request(as, 'POST', '/dlq/redrive', { type: 'sleep' });
      },
      unchanged: async () => {
        const peek = await adminOk('GET', '/dlq?type=sleep');
        expect((peek.messages as unknown[]).length).toBeGreaterThan(0);
      },
      applied: (body) => expect(body).toHaveProperty('method'),
    });
    const scheduleCase = (name: string, what: 'create' | 'pause' | 'delete') => {
      let schedule = '';
      list.push({
        name,
        allowed: ['operate', 'admin'],
        async run(as) {
          schedule = uid('sched');
          const definition = { name: schedule, type: 'echo', payload: {}, ...YEARLY };
          if (what === 'create') return request(as, 'POST', '/schedules', definition);
          await adminOk('POST', '/schedules', definition);
          return what === 'pause'
            ? request(as, 'POST', `/schedules/${schedule}/pause`)
            : request(as, 'DELETE', `/schedules/${schedule}`);
        },
        unchanged: async () => {
          const found = await admin('GET', `/schedules/${schedule}`);
          if (what === 'create') expect(found.status).toBe(404);
          else expect(found.body.state).toBe('enabled');
        },
      });
    };
    scheduleCase('POST /schedules', 'create');
    scheduleCase('POST /schedules/{name}/pause', 'pause');
    scheduleCase('DELETE /schedules/{name}', 'delete');

    const readCase = (name: string, allowed: Who[], deniedType: string | undefined, path: () => Promise<string>) =>
      list.push({
        name,
        allowed,
        ...(deniedType ? { deniedType } : {}),
        run: async (as) => request(as, 'GET', await path()),
      });
    readCase('GET /jobs/{echo}', ['readEcho', 'admin'], 'echo', async () => `/jobs/${await newJob('echo')}`);
    readCase('GET /jobs/{flaky}', ['admin'], 'flaky', async () => `/jobs/${await newJob('flaky')}`);
    readCase('GET /jobs', ['admin'], undefined, async () => '/jobs');
    readCase('GET /jobs?type=echo', ['readEcho', 'admin'], 'echo', async () => '/jobs?type=echo');
    readCase('GET /dlq?type=echo', ['readEcho', 'admin'], 'echo', async () => '/dlq?type=echo');
    readCase('GET /schedules', ['readEcho', 'admin'], undefined, async () => '/schedules');
    list.push({
      name: 'GET /overview',
      allowed: ['readEcho', 'admin'],
      run: (as) => request(as, 'GET', '/overview'),
      applied: (body) => expect((body.types as { type: string }[]).length).toBeGreaterThan(0),
    });
    return list;
  }

  /**
   * Every route as `who` calls it. Returns what went wrong (empty: allowed calls succeeded, every
   * other call answered 403 `forbidden` naming the caller, the action and the type to blame, and
   * wrote nothing).
   */
  async function check(who: Who): Promise<string[]> {
    const as = CALLERS[who];
    const problems: string[] = [];
    for (const c of cases()) {
      const response = await c.run(as);
      if (c.allowed.includes(who)) {
        if (response.status >= 300) problems.push(`${c.name}: ${response.status} ${JSON.stringify(response.body)}`);
        else await c.applied?.(response.body);
        continue;
      }
      if (response.status !== 403 || response.body.error?.code !== 'forbidden') {
        problems.push(`${c.name}: expected 403 forbidden, got ${response.status} ${JSON.stringify(response.body)}`);
        continue;
      }
      expect(response.body.error?.message, c.name).toContain(as.arn);
      expect(typeof response.body.error?.action, c.name).toBe('string');
      // a grant on the action, scoped to other types, is refused naming the type
      if (c.deniedType && who !== 'unlisted' && response.body.error?.type !== undefined)
        expect(response.body.error.type, c.name).toBe(c.deniedType);
      await c.unchanged?.();
    }
    return problems;
  }

  /** A control grant scoped to other types is refused naming the action, the control and the type. */
  async function namesTheType(): Promise<void> {
    const id = await newJob('flaky', later());
    const response = await request(CALLERS.controlEcho, 'POST', `/jobs/${id}/cancel`);
    expect(response.status).toBe(403);
    expect(response.body.error).toMatchObject({
      code: 'forbidden',
      action: 'control',
      control: 'cancel',
      type: 'flaky',
    });
    expect(await stateOf(id)).toBe('scheduled');
  }

  /** A reader scoped by type sees only its types in the overview and the schedule list. */
  async function scopedReader(): Promise<void> {
    await adminOk('POST', '/schedules', {
      name: uid('s-flaky'),
      type: 'flaky',
      payload: payloadFor('flaky'),
      ...YEARLY,
    });
    await adminOk('POST', '/schedules', { name: uid('s-echo'), type: 'echo', payload: {}, ...YEARLY });
    const overview = await request(CALLERS.readEcho, 'GET', '/overview');
    expect((overview.body.types as { type: string }[]).map((t) => t.type)).toEqual(['echo']);
    const schedules = await request(CALLERS.readEcho, 'GET', '/schedules');
    expect([...new Set((schedules.body.schedules as { type: string }[]).map((s) => s.type))]).toEqual(['echo']);
    const all = await admin('GET', '/schedules');
    expect(new Set((all.body.schedules as { type: string }[]).map((s) => s.type))).toContain('flaky');
  }

  /**
   * A cancel, a retry, a DLQ redrive and a schedule pause, each by another principal, and who did
   * them on the job, the DLQ and the schedule. Returns the job and the schedule, for the log lines.
   */
  async function auditTrail(): Promise<{ jobId: string; schedule: string }> {
    const enqueued = await request(CALLERS.enqueue, 'POST', '/jobs', {
      id: uid('audit'),
      type: 'echo',
      payload: {},
      ...WAIT,
    });
    const jobId = enqueued.body.id as string;
    expect(enqueued.body.enqueuedBy).toBe(CALLERS.enqueue.arn);
    expect((await request(CALLERS.controlEcho, 'POST', `/jobs/${jobId}/cancel`)).status).toBe(200);
    expect((await request(CALLERS.admin, 'POST', `/jobs/${jobId}/retry`)).status).toBe(200);
    const job = (await admin('GET', `/jobs/${jobId}`)).body;
    expect(job.enqueuedBy).toBe(CALLERS.enqueue.arn);
    expect(job.controls).toEqual([
      { action: 'cancel', by: CALLERS.controlEcho.arn, at: expect.any(String) },
      { action: 'retry', by: CALLERS.admin.arn, at: expect.any(String) },
    ]);

    await target.sendToDlq('sleep', JSON.stringify({ v: 1, id: uid('dl'), type: 'sleep' }));
    const redrive = await request(CALLERS.operate, 'POST', '/dlq/redrive', { type: 'sleep' });
    expect(redrive.status).toBeLessThan(300);
    // recorded unless it started nothing (a move task already running) or moved nothing
    if (redrive.body.method === 'move-task' ? redrive.body.status === 'started' : Number(redrive.body.moved) > 0) {
      const { lastRedrive } = (await admin('GET', '/dlq?type=sleep')).body;
      expect(lastRedrive).toMatchObject({ by: CALLERS.operate.arn, method: redrive.body.method });
    }
    const schedule = uid('audit-s');
    await adminOk('POST', '/schedules', { name: schedule, type: 'echo', payload: {}, ...YEARLY });
    expect((await admin('GET', `/schedules/${schedule}`)).body.changedBy).toMatchObject({ action: 'create' });
    expect((await request(CALLERS.operate, 'POST', `/schedules/${schedule}/pause`)).status).toBe(200);
    const paused = (await admin('GET', `/schedules/${schedule}`)).body;
    expect(paused.state).toBe('paused');
    expect(paused.changedBy).toEqual({ action: 'pause', by: CALLERS.operate.arn, at: expect.any(String) });
    return { jobId, schedule };
  }

  return { request, admin, check, namesTheType, scopedReader, auditTrail };
}

/**
 * Checks the API's `operator action` log lines (structured JSON) for what {@link auditTrail}
 * did: who, which session, on what.
 */
export function expectAuditLines(
  lines: readonly Record<string, unknown>[],
  trail: { jobId: string; schedule: string },
) {
  const audit = lines.filter((line) => line.message === 'operator action');
  const find = (action: string, extra: Record<string, unknown>) =>
    audit.find((line) => line.action === action && Object.entries(extra).every(([k, v]) => line[k] === v));
  expect(
    find('cancel', { jobId: trail.jobId, by: CALLERS.controlEcho.arn, session: 'session-controlEcho', type: 'echo' }),
  ).toBeDefined();
  expect(find('retry', { jobId: trail.jobId, by: CALLERS.admin.arn, type: 'echo' })).toBeDefined();
  expect(find('dlq.redrive', { by: CALLERS.operate.arn, type: 'sleep' })).toBeDefined();
  expect(find('schedule.pause', { schedule: trail.schedule, by: CALLERS.operate.arn, type: 'echo' })).toBeDefined();
  // a refused call is no operator action
  expect(audit.filter((line) => line.by === CALLERS.unlisted.arn)).toEqual([]);
}
