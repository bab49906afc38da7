/**
 * Code versions on local AWS (DynamoDB Local, the SQS emulator, the API over HTTP and the queue
 * runners; docs/workflows.md "Changing code safely"). A job runs steps `a` and `b` on version 1
 * of its code and waits for a signal; a deploy changes the code it resumes on (each job has its
 * own "deployed" code, so the cases share one platform). A renamed, a removed and a reordered
 * step are each caught on replay: the job is `held` (reason `nondeterministic`, one attempt, no
 * onFailure, listed under `state=held`) with no step body of the new code run, and nothing moves
 * it (no retry, no supervisor resend) while its dependants wait; an unchanged handler and a
 * `ctx.patched` branch succeed; a held job recovers by a retry on fixed code or a rerun from the
 * diverging step (its dependants then run), or ends by a cancel (its dependants end by policy).
 * Each entry's mark (position, version) rides in its own item: a step still costs 1 write unit.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { createAwsClients } from '../../shared/aws/clients';
import { DynamoJournal } from '../../shared/aws/dynamo-journal';
import type { JobView } from '../../shared/core/job';
import { defineJobType } from '../../shared/core/job-type';
import { incarnationOf } from '../../shared/core/table';
import { CostMeter } from '../../shared/lambda/cost-meter';
import { createLogger } from '../../shared/logger';
import type { JobContext, JobDefinition } from '../../shared/runtime/job-definition';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { type LocalPlatform, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';
import { enqueueNew } from '../support/local-api';

let aws: LocalAws;
let platform: LocalPlatform;

type Code = 'v1' | 'renamed' | 'removed' | 'reordered' | 'patched';
/** The code each job runs now (its "deploy"). */
const deployed = new Map<string, Code>();
/** Step bodies run, by `<job>:<step>`. */
const runs = new Map<string, number>();
/** onFailure calls, by job id. */
const hooks = new Map<string, number>();

const spec = defineJobType({ type: 'versioned', payload: z.object({}) });
const versioned: JobDefinition = {
  spec,
  version: 'it-1',
  run: async (_p, ctx: JobContext) => {
    const code = deployed.get(ctx.jobId) ?? 'v1';
    const step = (name: string) =>
      ctx.step(name, () => {
        runs.set(`${ctx.jobId}:${name}`, (runs.get(`${ctx.jobId}:${name}`) ?? 0) + 1);
        return name;
      });
    const done: unknown[] = [];
    if (code === 'reordered') done.push(await step('b'), await step('a'));
    else if (code === 'renamed') done.push(await step('a'), await step('b-renamed'));
    else if (code === 'removed') done.push(await step('a'));
    else done.push(await step('a'), await step('b'));
    await ctx.waitForSignal('go', { timeout: '1h' });
    if (code === 'patched' && (await ctx.patched('audit'))) done.push(await step('audit'));
    done.push(await step('c'));
    return done;
  },
  onFailure: async (_p, info) => {
    hooks.set(info.jobId, (hooks.get(info.jobId) ?? 0) + 1);
  },
};
/** A dependant (`dependsOn` a versioned job). */
const after: JobDefinition = {
  spec: defineJobType({ type: 'after', payload: z.object({}) }),
  run: async () => 'after',
};

beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
  aws.applyEnv();
  platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('versions'),
    jobs: [versioned, after],
    logger: createLogger({ level: 'error' }),
  });
}, 120_000);
afterAll(async () => {
  await platform?.stop();
  await aws?.stop();
});

const view = (id: string) => fetch(`${platform.url}/jobs/${id}`).then((r) => r.json()) as Promise<JobView>;
const post = (path: string, body?: unknown) =>
  fetch(`${platform.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as JobView }));

async function until(id: string, done: (job: JobView) => boolean, ms = 30_000): Promise<JobView> {
  const deadline = Date.now() + ms;
  for (;;) {
    const job = await view(id);
    if (done(job)) return job;
    if (Date.now() > deadline) throw new Error(`job ${id} stayed ${JSON.stringify(job)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs a job on version 1 until it waits for `go`, deploys `code` for it, and sends `go`. */
async function resumeOn(id: string, code: Code): Promise<JobView> {
  await enqueueNew(platform.url, { id, type: 'versioned', payload: {}, maxAttempts: 3 });
  await until(id, (j) => j.state === 'waiting');
  deployed.set(id, code);
  expect((await post(`/jobs/${id}/signals/go`, { payload: {} })).status).toBe(202);
  return until(id, (j) => j.state === 'succeeded' || j.state === 'failed' || j.state === 'held');
}

/** Enqueues two dependants of `parent` (policies fail and cancel); returns their ids. */
async function dependantsOf(parent: string): Promise<[string, string]> {
  const fail = `${parent}-child-fail`;
  const cancel = `${parent}-child-cancel`;
  await enqueueNew(platform.url, { id: fail, type: 'after', payload: {}, dependsOn: [parent] });
  await enqueueNew(platform.url, {
    id: cancel,
    type: 'after',
    payload: {},
    dependsOn: [{ id: parent, onParentFailure: 'cancel' }],
  });
  return [fail, cancel];
}

/** `resumeOn(id, 'renamed')` with two dependants: held, and its dependants still waiting. */
async function heldWithDependants(id: string): Promise<[string, string]> {
  await enqueueNew(platform.url, { id, type: 'versioned', payload: {}, maxAttempts: 3 });
  await until(id, (j) => j.state === 'waiting');
  const children = await dependantsOf(id);
  deployed.set(id, 'renamed');
  expect((await post(`/jobs/${id}/signals/go`, { payload: {} })).status).toBe(202);
  expect(await until(id, (j) => j.state !== 'waiting' && j.state !== 'queued' && j.state !== 'running')).toMatchObject({
    state: 'held',
    attempts: 1,
  });
  for (const child of children) expect((await view(child)).state).toBe('waiting');
  return children;
}

describe('a replay on changed code, on local AWS', () => {
  it('an unchanged handler resumes and runs only its new step', async () => {
    const id = `same-${Date.now()}`;
    const job = await resumeOn(id, 'v1');
    expect(job).toMatchObject({ state: 'succeeded', result: ['a', 'b', 'c'] });
    for (const name of ['a', 'b', 'c']) expect(runs.get(`${id}:${name}`)).toBe(1);
  });

  it.each([
    ['renamed', 'position 1: the journal recorded step "b" (version it-1); this code called step "b-renamed"'],
    ['removed', 'position 1: the journal recorded step "b" (version it-1); this code called wait "go"'],
    ['reordered', 'position 0: the journal recorded step "a" (version it-1); this code called step "b"'],
  ] as const)('a %s step is caught: the job is held, with reason nondeterministic', async (code, names) => {
    const id = `${code}-${Date.now()}`;
    const job = await resumeOn(id, code);
    expect(job).toMatchObject({
      state: 'held',
      attempts: 1,
      lastError: { name: 'NondeterminismError', reason: 'nondeterministic' },
    });
    // the position, the recorded call and its version, and the call made now
    expect(job.lastError?.message).toContain(names);
    expect(runs.get(`${id}:b-renamed`)).toBeUndefined();
    expect(runs.get(`${id}:c`)).toBeUndefined();
    expect(runs.get(`${id}:a`)).toBe(1);
    // not terminal: no onFailure ran
    expect(hooks.get(id)).toBeUndefined();
  });

  it('nothing moves a held job: no retry, no supervisor resend; it is listed under state=held; dependants wait', async () => {
    const id = `still-${Date.now()}`;
    const [fail, cancel] = await heldWithDependants(id);
    const heldAt = await view(id);
    await platform.supervise();
    await new Promise((r) => setTimeout(r, 1500));
    const later = await view(id);
    expect(later).toMatchObject({ state: 'held', attempts: 1, updatedAt: heldAt.updatedAt });
    expect(later.lastError).toMatchObject({ name: 'NondeterminismError', reason: 'nondeterministic' });
    expect(later.lastError?.message).toContain('(version it-1)');
    expect(runs.get(`${id}:c`)).toBeUndefined();
    for (const child of [fail, cancel]) expect((await view(child)).state).toBe('waiting');
    // the sparse state index lists it (the hold's write set its key)
    const page = (await fetch(`${platform.url}/jobs?type=versioned&state=held`).then((r) => r.json())) as {
      items: { id: string; state: string }[];
    };
    expect(page.items.map((j) => j.id)).toContain(id);
    expect(page.items.every((j) => j.state === 'held')).toBe(true);
    expect(hooks.get(id)).toBeUndefined();
  });

  it("a held job's cancel ends it cancelled and releases its dependants by their policies", async () => {
    const id = `cancel-${Date.now()}`;
    const [fail, cancel] = await heldWithDependants(id);
    const cancelled = await post(`/jobs/${id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.state).toBe('cancelled');
    expect(await until(fail, (j) => j.state !== 'waiting')).toMatchObject({
      state: 'failed',
      lastError: { reason: 'parent_failed' },
    });
    expect(await until(cancel, (j) => j.state !== 'waiting')).toMatchObject({ state: 'cancelled' });
    // a second cancel finds it ended
    expect((await post(`/jobs/${id}/cancel`)).status).toBe(409);
    expect(hooks.get(id)).toBeUndefined();
  });

  it('a patched() branch passes: a run that reaches the point on new code takes it', async () => {
    const id = `patched-${Date.now()}`;
    const job = await resumeOn(id, 'patched');
    expect(job).toMatchObject({ state: 'succeeded', result: ['a', 'b', 'audit', 'c'] });
  });

  it('a held job recovers: retried on fixed code, or rerun from the diverging step on the new code', async () => {
    const fixed = `fixed-${Date.now()}`;
    const children = await heldWithDependants(fixed);
    deployed.set(fixed, 'v1'); // the fix: the step's old name back
    expect((await post(`/jobs/${fixed}/retry`)).status).toBe(200);
    expect(await until(fixed, (j) => j.state === 'succeeded')).toMatchObject({ result: ['a', 'b', 'c'] });
    expect(runs.get(`${fixed}:b`)).toBe(1);
    // its dependants run once it succeeded
    for (const child of children) expect(await until(child, (j) => j.state === 'succeeded')).toBeDefined();

    const rerun = `rerun-${Date.now()}`;
    expect((await resumeOn(rerun, 'renamed')).state).toBe('held');
    // keep `a`, drop the recorded `b` and what follows: the new code runs `b-renamed` once
    expect((await post(`/jobs/${rerun}/rerun`, { fromStep: 'b' })).status).toBe(200);
    const done = await until(rerun, (j) => j.state === 'succeeded');
    expect(done.result).toEqual(['a', 'b-renamed', 'c']);
    expect(runs.get(`${rerun}:a`)).toBe(1);
    expect(runs.get(`${rerun}:b-renamed`)).toBe(1);
  });

  it("each entry's position and version are in its own item: a step still costs 1 write unit", async () => {
    const id = `mark-${Date.now()}`;
    const job = await resumeOn(id, 'v1');
    const meter = new CostMeter();
    const journal = new DynamoJournal(createAwsClients({ cost: meter }).dynamo, platform.config.tableName);
    const scope = { jobId: id, incarnation: incarnationOf(job.createdAt) };
    const entries = await journal.load(scope);
    expect(entries.get('step#a')?.mark).toEqual({ seq: 0, version: 'it-1' });
    expect(entries.get('step#b')?.mark).toEqual({ seq: 1, version: 'it-1' });
    expect(entries.get('step#c')?.mark).toEqual({ seq: 3, version: 'it-1' });
    const written = await meter.measure(() =>
      journal.record({
        ...scope,
        kind: 'step',
        name: 'measured',
        value: 'x'.repeat(700),
        at: Date.now(),
        expiresAt: Math.floor(Date.now() / 1000) + 86_400,
        mark: { seq: 4, version: 'it-1', patches: ['audit'] },
      }),
    );
    expect(written.cost.writeUnits).toBe(1);
  });
});
