/**
 * Job dependencies on local AWS (DynamoDB Local and the local SQS) through the real SDK and the
 * API: a fan-out/fan-in 1 → 60 → 1 enqueued over HTTP, run by the queue runners; the join runs
 * exactly once, after the last child, and reads every parent's result. And a flow whose middle
 * job fails, under each policy.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { createAwsClients } from '../../shared/aws/clients';
import { DynamoJobGraph } from '../../shared/aws/dynamo-job-graph';
import { DynamoJobStore } from '../../shared/aws/dynamo-job-store';
import { edgeOutcome } from '../../shared/core/dependencies';
import { defineJobType } from '../../shared/core/job-type';
import { PermanentError } from '../../shared/errors';
import { CostMeter } from '../../shared/lambda/cost-meter';
import type { JobDefinition } from '../../shared/runtime/job-definition';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { type LocalPlatform, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';
import { newJob } from '../support/fakes';

let aws: LocalAws;
let platform: LocalPlatform;
/** Each run: job id and the time it started and ended; the parents the join saw. */
const runs: { id: string; start: number; end: number }[] = [];
let joinSaw: Record<string, { state: string; result: unknown }> | undefined;
/** Holds the fan-out's root running until its children and join are written. */
let releaseRoot: () => void = () => {};
const rootHeld = new Promise<void>((resolve) => {
  releaseRoot = resolve;
});

const spec = defineJobType({
  type: 'dagnode',
  payload: z.object({ fail: z.boolean().optional() }),
  timeoutMs: 10_000,
  retry: { maxAttempts: 1, backoff: { kind: 'constant', delayMs: 1000 } },
});
const node: JobDefinition = {
  spec,
  run: async (payload, ctx) => {
    const start = Date.now();
    if (ctx.jobId.startsWith('root-') && !ctx.jobId.includes('-c')) await rootHeld;
    if (ctx.jobId.startsWith('join')) joinSaw = await ctx.parents();
    await new Promise((r) => setTimeout(r, 5));
    runs.push({ id: ctx.jobId, start, end: Date.now() });
    if ((payload as { fail?: boolean }).fail) throw new PermanentError('fails on purpose');
    return { ran: ctx.jobId };
  },
};

beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
  platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('deps'),
    jobs: [node],
    runner: { batchSize: 10, maxConcurrency: 4, waitTimeSeconds: 1 },
  });
}, 120_000);

afterAll(async () => {
  await platform?.stop();
  await aws?.stop();
});

async function post(path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${platform.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

async function until(check: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 500));
  }
}

describe('dependencies on local AWS', () => {
  it('fan-out/fan-in 1 → 60 → 1: the join runs once, after the last child, and sees every result', async () => {
    const width = 60;
    const root = `root-${Date.now()}`;
    const children = Array.from({ length: width }, (_, i) => `${root}-c${i}`);
    const join = `join-${root}`;
    // the root is held running until every child and the join are written: they register with it
    expect((await post('/jobs', { type: 'dagnode', id: root, payload: {} })).status).toBe(201);
    const batch = await post('/jobs/batch', {
      jobs: [
        ...children.map((id) => ({ type: 'dagnode', id, payload: {}, dependsOn: [root] })),
        { type: 'dagnode', id: join, payload: {}, dependsOn: children },
      ],
    });
    expect(batch.status).toBe(200);
    const results = batch.json.results as { status: string }[];
    expect(results.every((r) => r.status === 'created')).toBe(true);
    const waiting = await platform.store.get(join);
    expect(waiting?.state).toBe('waiting');
    expect(waiting?.pendingParents).toBe(width);
    releaseRoot();

    await until(async () => (await platform.store.get(join))?.state === 'succeeded', 90_000);
    expect((await platform.store.get(join))?.state).toBe('succeeded');
    const joinRuns = runs.filter((r) => r.id === join);
    expect(joinRuns).toHaveLength(1);
    const lastChildEnd = Math.max(...runs.filter((r) => children.includes(r.id)).map((r) => r.end));
    expect(runs.filter((r) => children.includes(r.id))).toHaveLength(width);
    expect(joinRuns[0]?.start).toBeGreaterThanOrEqual(lastChildEnd);
    expect(Object.keys(joinSaw ?? {})).toHaveLength(width);
    expect(joinSaw?.[children[0] as string]).toEqual({ state: 'succeeded', result: { ran: children[0] } });
    // the API shows the edges
    const view = (await (await fetch(`${platform.url}/jobs/${join}`)).json()) as { parents?: unknown[] };
    expect(view.parents).toHaveLength(width);
    const rootView = (await (await fetch(`${platform.url}/jobs/${root}`)).json()) as { children?: string[] };
    expect(rootView.children?.sort()).toEqual([...children].sort());
  }, 120_000);

  it('a flow whose middle job fails: each policy decides its child; nothing runs twice', async () => {
    const tag = `f${Date.now()}`;
    const body = {
      id: tag,
      jobs: [
        { id: `${tag}-a`, type: 'dagnode', payload: {} },
        { id: `${tag}-b`, type: 'dagnode', payload: { fail: true }, dependsOn: [`${tag}-a`] },
        { id: `${tag}-fail`, type: 'dagnode', payload: {}, dependsOn: [`${tag}-b`] },
        {
          id: `${tag}-cancel`,
          type: 'dagnode',
          payload: {},
          dependsOn: [{ id: `${tag}-b`, onParentFailure: 'cancel' }],
        },
        {
          id: `${tag}-ignore`,
          type: 'dagnode',
          payload: {},
          dependsOn: [{ id: `${tag}-b`, onParentFailure: 'ignore' }],
        },
      ],
    };
    const created = await post('/flows', body);
    expect(created.status).toBe(201);
    await until(async () => (await platform.store.get(`${tag}-ignore`))?.state === 'succeeded', 60_000);
    const states = await Promise.all(body.jobs.map(async (j) => (await platform.store.get(j.id))?.state));
    expect(states).toEqual(['succeeded', 'failed', 'failed', 'cancelled', 'succeeded']);
    expect(
      runs
        .filter((r) => r.id.startsWith(tag))
        .map((r) => r.id)
        .sort(),
    ).toEqual([`${tag}-a`, `${tag}-b`, `${tag}-ignore`].sort());
    const flow = (await (await fetch(`${platform.url}/flows/${tag}`)).json()) as { nodes: { state: string }[] };
    expect(flow.nodes.map((n) => n.state)).toEqual(states);
    // a replay answers 200 and runs nothing again
    expect((await post('/flows', body)).status).toBe(200);
    // a cycle writes nothing
    const cycle = await post('/flows', {
      jobs: [
        { id: `${tag}-x`, type: 'dagnode', payload: {}, dependsOn: [`${tag}-y`] },
        { id: `${tag}-y`, type: 'dagnode', payload: {}, dependsOn: [`${tag}-x`] },
      ],
    });
    expect(cycle.status).toBe(400);
    expect((cycle.json.error as { code: string }).code).toBe('flow_cycle');
    expect(await platform.store.get(`${tag}-x`)).toBeUndefined();
  }, 90_000);
});

describe('write units of the dependency writes, as DynamoDB Local reports them', () => {
  it('an edge: 2 to register, 1 to release; 1 for the wake (none for an only parent) and 1 for the parent’s record', async () => {
    const meter = new CostMeter();
    const clients = createAwsClients({ cost: meter });
    const table = platform.config.tableName;
    const store = new DynamoJobStore(clients.dynamo, table);
    const graph = new DynamoJobGraph(clients.dynamo, table);
    const tag = `wu${Date.now()}`;
    const now = Date.now();
    const units = async (fn: () => Promise<unknown>) => (await meter.measure(fn)).cost.writeUnits;
    await store.create(newJob({ id: `${tag}-p`, type: 'dagnode', state: 'running' }, now));
    await store.create(newJob({ id: `${tag}-c`, type: 'dagnode', state: 'waiting', pendingParents: 1 }, now));
    const ttl = Math.floor(now / 1000) + 86_400;
    const entry = { child: `${tag}-c`, policy: 'fail' as const, index: 0 };
    expect(
      await units(async () => {
        const added = await graph.addChild({ parent: `${tag}-p` });
        await graph.fillSlot({
          parent: `${tag}-p`,
          incarnation: 'incarnation' in added ? added.incarnation : '',
          slot: added.slot ?? 0,
          entry,
          expiresAt: ttl,
        });
      }),
    ).toBe(2);
    const release = () =>
      graph.release({
        child: `${tag}-c`,
        index: 0,
        outcome: edgeOutcome('succeeded', 'fail'),
        parent: `${tag}-p`,
        parentState: 'succeeded',
        now,
        expiresAt: ttl,
      });
    // the count and the wake (pendingParents reached 0)
    expect(await units(release)).toBe(2);
    // a replay is refused: billed as one write unit, changes nothing
    expect(await units(release)).toBe(1);
    expect(await units(() => graph.markReleased({ parent: `${tag}-p`, count: 1 }))).toBe(1);
    // a child with one parent: its release and wake are one write
    await store.create(newJob({ id: `${tag}-only`, type: 'dagnode', state: 'waiting', pendingParents: 1 }, now));
    const only = await meter.measure(() =>
      graph.release({
        child: `${tag}-only`,
        index: 0,
        outcome: edgeOutcome('succeeded', 'fail'),
        parent: `${tag}-p`,
        parentState: 'succeeded',
        now,
        expiresAt: ttl,
        only: true,
      }),
    );
    expect(only.value.kind).toBe('ready');
    expect(only.cost.writeUnits).toBe(1);

    // a join of 200 parents: what its releases cost as its record of counted edges grows
    const join = `${tag}-join`;
    await store.create(newJob({ id: join, type: 'dagnode', state: 'waiting', pendingParents: 200 }, now));
    let total = 0;
    for (let i = 0; i < 200; i++) {
      total += await units(() =>
        graph.release({
          child: join,
          index: i,
          outcome: edgeOutcome('succeeded', 'fail'),
          parent: `p${i}`,
          parentState: 'succeeded',
          now,
          expiresAt: ttl,
        }),
      );
    }
    expect((await store.get(join))?.state).toBe('queued');
    // 200 counts and a wake, each at least 1; the record adds about 5 bytes an edge
    expect(total).toBeGreaterThanOrEqual(201);
    expect(total).toBeLessThanOrEqual(201 + 200);
    clients.dynamo.destroy();
    clients.sqs.destroy();
    clients.scheduler.destroy();
  }, 60_000);
});
