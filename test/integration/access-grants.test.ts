/**
 * Who may do what, on local AWS (a platform of its own, so it is not among the e2e files that the
 * moto and deployed targets share): for each grant, a principal (its own local credentials, an
 * assumed role with a session) calls every route. Allowed calls succeed; every other call answers
 * 403 `forbidden` naming the action (and the type), and an admin client reads back that nothing
 * was written.
 */
import { Sha256 } from '@aws-crypto/sha256-js';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { SignatureV4 } from '@smithy/signature-v4';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { echo } from '../../functions/jobs/echo';
import { flaky } from '../../functions/jobs/flaky';
import { sleep } from '../../functions/jobs/sleep';
import type { Grant, GrantsDocument } from '../../shared/core/access';
import { createLogger } from '../../shared/logger';
import { LOCAL_CREDENTIALS } from '../local-aws/clients';
import { type LocalAws, type LocalCaller, startLocalAws } from '../local-aws/index';
import { assumedRole, localRoleId } from '../local-aws/local-access';
import { type LocalPlatform, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';
import { captureLogs } from '../support/fakes';

type Who = 'enqueue' | 'enqueueEcho' | 'signal' | 'controlEcho' | 'operate' | 'readEcho' | 'admin' | 'unlisted';
const WHO: readonly Who[] = [
  'enqueue',
  'enqueueEcho',
  'signal',
  'controlEcho',
  'operate',
  'readEcho',
  'admin',
  'unlisted',
];

const GRANTS: Record<Exclude<Who, 'unlisted'>, readonly Grant[]> = {
  enqueue: [{ action: 'enqueue' }],
  enqueueEcho: [{ action: 'enqueue', types: ['echo'] }],
  signal: [{ action: 'signal' }],
  controlEcho: [{ action: 'control', types: ['echo'], actions: ['cancel', 'bulk'] }],
  operate: [{ action: 'operate' }],
  readEcho: [{ action: 'read', types: ['echo'] }],
  admin: [{ action: 'admin' }],
};
const CALLERS = Object.fromEntries(WHO.map((who) => [who, assumedRole(`svc-${who}`, `session-${who}`)])) as Record<
  Who,
  LocalCaller
>;
const DOCUMENT: GrantsDocument = {
  v: 1,
  principals: Object.fromEntries(Object.entries(GRANTS).map(([who, grants]) => [localRoleId(`svc-${who}`), grants])),
};

const logs = captureLogs();
let aws: LocalAws;
let platform: LocalPlatform;
let seq = 0;
/** A payload each job type's schema takes. */
const payloadFor = (type: string) => (type === 'flaky' ? { failTimes: 0 } : {});
const uid = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++seq}`;

/** A signed request to the platform's Function URL. */
async function request(
  credentials: { accessKeyId: string; secretAccessKey: string },
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> & { error?: Record<string, unknown> } }> {
  const url = new URL(`${platform.url}${path}`);
  const text = body === undefined ? undefined : JSON.stringify(body);
  const signer = new SignatureV4({ service: 'lambda', region: aws.region, credentials, sha256: Sha256 });
  const signed = await signer.sign({
    method,
    protocol: url.protocol,
    hostname: url.hostname,
    ...(url.port ? { port: Number(url.port) } : {}),
    path: url.pathname,
    query: Object.fromEntries(url.searchParams),
    headers: { host: url.host, ...(text === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(text === undefined ? {} : { body: text }),
  });
  const response = await fetch(url, { method, headers: signed.headers, ...(text === undefined ? {} : { body: text }) });
  const raw = await response.text();
  return { status: response.status, body: raw ? JSON.parse(raw) : {} };
}
const admin = (method: string, path: string, body?: unknown) => request(LOCAL_CREDENTIALS, method, path, body);

async function adminOk(method: string, path: string, body?: unknown) {
  const response = await admin(method, path, body);
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}
const newJob = async (type: string, extra: Record<string, unknown> = {}) =>
  (await adminOk('POST', '/jobs', { id: uid(type), type, payload: payloadFor(type), ...extra })).id as string;
const stateOf = async (id: string) => (await admin('GET', `/jobs/${id}`)).body.state;
const absent = async (id: string) => expect((await admin('GET', `/jobs/${id}`)).status).toBe(404);

/** One route as a principal calls it: what it sets up, the call, and the read-back that nothing was written. */
interface Case {
  name: string;
  allowed: readonly Who[];
  /** The job type a 403 names, when one is to blame. */
  deniedType?: string;
  run(
    as: LocalCaller,
  ): Promise<{ status: number; body: Record<string, unknown> & { error?: Record<string, unknown> } }>;
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
          return request(as, 'POST', '/jobs', { id: ids[0], type: types[0], payload: payloadFor(types[0] as string) });
        return request(as, 'POST', '/jobs/batch', {
          jobs: types.map((type, i) => ({ id: ids[i], type, payload: payloadFor(type) })),
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
            { id: ids[0], type: 'echo', payload: {} },
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
        id = await newJob(type, { runAt: new Date(Date.now() + 3_600_000).toISOString() });
        if (what === 'retry') await adminOk('POST', `/jobs/${id}/cancel`);
        return request(as, 'POST', `/jobs/${id}/${what}`);
      },
      unchanged: async () => expect(await stateOf(id)).toBe(what === 'cancel' ? 'scheduled' : 'cancelled'),
      applied: (body) => expect(body.state).toBe(what === 'cancel' ? 'cancelled' : 'queued'),
    });
  };
  controlCase('POST /jobs/{echo}/cancel', ['controlEcho', 'admin'], 'echo', 'echo', 'cancel');
  controlCase('POST /jobs/{flaky}/cancel', ['admin'], 'flaky', 'flaky', 'cancel');
  controlCase('POST /jobs/{echo}/retry', ['admin'], undefined, 'echo', 'retry');
  const bulkCase = (name: string, allowed: Who[], deniedType: string | undefined, types: string[]) => {
    let ids: string[] = [];
    list.push({
      name,
      allowed,
      ...(deniedType ? { deniedType } : {}),
      async run(as) {
        ids = [];
        for (const type of types)
          ids.push(await newJob(type, { runAt: new Date(Date.now() + 3_600_000).toISOString() }));
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
    name: 'POST /dlq/redrive echo',
    allowed: ['operate', 'admin'],
    async run(as) {
      const dlq = platform.config.routes.echo?.dlqUrl as string;
      await platform.clients.sqs.send(
        new SendMessageCommand({ QueueUrl: dlq, MessageBody: JSON.stringify({ v: 1, id: uid('dl'), type: 'echo' }) }),
      );
      return request(as, 'POST', '/dlq/redrive', { type: 'echo' });
    },
    unchanged: async () => {
      const peek = await adminOk('GET', '/dlq?type=echo');
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
        const definition = { name: schedule, type: 'echo', payload: {}, rate: '1 hour' };
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

beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
  platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('access'),
    jobs: [echo, flaky, sleep],
    runWorkers: false,
    logger: createLogger({ level: 'info', sink: logs.sink }),
    grants: DOCUMENT,
    callers: Object.values(CALLERS),
  });
});

afterAll(async () => {
  await platform?.stop();
  await aws?.stop();
});

describe('grants on local AWS', () => {
  it.each(WHO)('%s: allowed calls succeed, every other call answers 403 and writes nothing', async (who) => {
    const as = CALLERS[who];
    const problems: string[] = [];
    for (const c of cases()) {
      const response = await c.run(as);
      const allowed = c.allowed.includes(who);
      if (allowed) {
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
    expect(problems).toEqual([]);
  });

  it('names the type a scoped grant does not cover', async () => {
    const id = await newJob('flaky', { runAt: new Date(Date.now() + 3_600_000).toISOString() });
    const response = await request(CALLERS.controlEcho, 'POST', `/jobs/${id}/cancel`);
    expect(response.status).toBe(403);
    expect(response.body.error).toMatchObject({
      code: 'forbidden',
      action: 'control',
      control: 'cancel',
      type: 'flaky',
    });
    expect(await stateOf(id)).toBe('scheduled');
  });

  it('shows a reader scoped by type only its types in the overview and the schedule list', async () => {
    await adminOk('POST', '/schedules', {
      name: uid('s-flaky'),
      type: 'flaky',
      payload: payloadFor('flaky'),
      rate: '1 hour',
    });
    await adminOk('POST', '/schedules', { name: uid('s-echo'), type: 'echo', payload: {}, rate: '1 hour' });
    const overview = await request(CALLERS.readEcho, 'GET', '/overview');
    expect((overview.body.types as { type: string }[]).map((t) => t.type)).toEqual(['echo']);
    const schedules = await request(CALLERS.readEcho, 'GET', '/schedules');
    const types = new Set((schedules.body.schedules as { type: string }[]).map((s) => s.type));
    expect([...types]).toEqual(['echo']);
    const all = await admin('GET', '/schedules');
    expect(new Set((all.body.schedules as { type: string }[]).map((s) => s.type))).toEqual(new Set(['echo', 'flaky']));
  });

  it('audits a cancel, a retry, a DLQ redrive and a schedule pause: on the job or schedule, and in the log', async () => {
    const auditor = assumedRole('svc-admin', 'session-admin');
    const enqueued = await request(CALLERS.enqueue, 'POST', '/jobs', {
      id: uid('audit'),
      type: 'echo',
      payload: {},
      delaySeconds: 900,
    });
    const id = enqueued.body.id as string;
    expect(enqueued.body.enqueuedBy).toBe(CALLERS.enqueue.arn);
    expect((await request(CALLERS.controlEcho, 'POST', `/jobs/${id}/cancel`)).status).toBe(200);
    expect((await request(auditor, 'POST', `/jobs/${id}/retry`)).status).toBe(200);
    const job = (await admin('GET', `/jobs/${id}`)).body;
    expect(job.enqueuedBy).toBe(CALLERS.enqueue.arn);
    expect(job.controls).toEqual([
      { action: 'cancel', by: CALLERS.controlEcho.arn, at: expect.any(String) },
      { action: 'retry', by: auditor.arn, at: expect.any(String) },
    ]);

    const dlq = platform.config.routes.echo?.dlqUrl as string;
    await platform.clients.sqs.send(
      new SendMessageCommand({ QueueUrl: dlq, MessageBody: JSON.stringify({ v: 1, id: uid('dl'), type: 'echo' }) }),
    );
    expect((await request(CALLERS.operate, 'POST', '/dlq/redrive', { type: 'echo' })).status).toBeLessThan(300);
    const schedule = uid('audit-s');
    await adminOk('POST', '/schedules', { name: schedule, type: 'echo', payload: {}, rate: '1 hour' });
    expect((await admin('GET', `/schedules/${schedule}`)).body.changedBy).toMatchObject({ action: 'create' });
    expect((await request(CALLERS.operate, 'POST', `/schedules/${schedule}/pause`)).status).toBe(200);
    const paused = (await admin('GET', `/schedules/${schedule}`)).body;
    expect(paused.state).toBe('paused');
    expect(paused.changedBy).toEqual({ action: 'pause', by: CALLERS.operate.arn, at: expect.any(String) });

    const audit = logs.lines.filter((line) => line.message === 'operator action');
    const find = (action: string, extra: Record<string, unknown>) =>
      audit.find((line) => line.action === action && Object.entries(extra).every(([k, v]) => line[k] === v));
    expect(
      find('cancel', { jobId: id, by: CALLERS.controlEcho.arn, session: 'session-controlEcho', type: 'echo' }),
    ).toBeDefined();
    expect(find('retry', { jobId: id, by: auditor.arn, type: 'echo' })).toBeDefined();
    expect(find('dlq.redrive', { by: CALLERS.operate.arn, type: 'echo' })).toBeDefined();
    expect(find('schedule.pause', { schedule, by: CALLERS.operate.arn, type: 'echo' })).toBeDefined();
    // a refused call is no operator action
    expect(audit.filter((line) => line.by === CALLERS.unlisted.arn)).toEqual([]);
  });

  it('refuses an unsigned request at the Function URL', async () => {
    const response = await fetch(`${platform.url}/jobs/x`);
    expect(response.status).toBe(403);
  });
});
