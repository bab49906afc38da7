/**
 * `POST /flows` and `GET /flows/{id}` on the in-memory ports, and the parents and children of
 * `GET /jobs/{id}`: a flow is checked whole, and any 400 writes nothing.
 */
import { describe, expect, it } from 'vitest';
import { depsPlatform } from './workflow-deps-harness';

const node = (id: string, dependsOn?: unknown[], extra: Record<string, unknown> = {}) => ({
  id,
  type: 'node',
  payload: {},
  ...(dependsOn ? { dependsOn } : {}),
  ...extra,
});

/** What a refused flow left written: jobs, parents items, flows. */
function written(p: ReturnType<typeof depsPlatform>) {
  return {
    jobs: p.store.all().length,
    writes: p.graph.calls.filter((c) => ['putParents', 'addChild', 'fillSlot', 'putFlow', 'release'].includes(c.method))
      .length,
    sent: p.queue.sent.length,
  };
}

describe('POST /flows', () => {
  it('writes a diamond, sends only its root, and runs it in order; GET /flows shows the graph', async () => {
    const p = depsPlatform();
    const out = await p.flows.create({
      id: 'f1',
      jobs: [node('D', ['B', { id: 'C', onParentFailure: 'ignore' }]), node('B', ['A']), node('C', ['A']), node('A')],
    });
    expect(out.created).toBe(true);
    expect(p.queue.sent.map((s) => s.message.id)).toEqual(['A']);
    expect(out.flow.nodes.find((n) => n.id === 'D')).toEqual({
      id: 'D',
      type: 'node',
      state: 'waiting',
      dependsOn: [
        { id: 'B', onParentFailure: 'fail' },
        { id: 'C', onParentFailure: 'ignore' },
      ],
      children: [],
    });
    expect(out.flow.nodes.find((n) => n.id === 'A')?.children).toEqual(['B', 'C']);
    // the flow's own edges were registered at each parent's creation: no per-edge registration
    expect(p.graph.calls.filter((c) => c.method === 'addChild' || c.method === 'fillSlot')).toEqual([]);
    expect(p.graph.calls.filter((c) => c.method === 'putChildren').map((c) => c.id)).toEqual(['A', 'B', 'C']);
    expect(p.store.peek('A')?.childCount).toBe(2);
    await p.drain();
    expect(p.runs[0]).toBe('A');
    expect(p.runs.at(-1)).toBe('D');
    const view = await p.flows.get('f1');
    expect(view.nodes.map((n) => n.state)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
    // GET /jobs/{id}: parents with their policies, children
    const d = await p.jobs.get('D');
    expect(d.parents).toEqual([
      { id: 'B', onParentFailure: 'fail' },
      { id: 'C', onParentFailure: 'ignore' },
    ]);
    expect((await p.jobs.get('A')).children).toEqual(['B', 'C']);
    expect((await p.jobs.get('A')).parents).toBeUndefined();
  });

  it('a replay of the same flow answers 200 and runs nothing twice', async () => {
    const p = depsPlatform();
    const body = { id: 'f2', jobs: [node('A'), node('B', ['A'])] };
    expect((await p.flows.create(body)).created).toBe(true);
    expect((await p.flows.create(body)).created).toBe(false);
    await p.drain();
    expect(p.runs).toEqual(['A', 'B']);
    expect((await p.flows.create(body)).created).toBe(false);
    await p.drain();
    expect(p.runs).toEqual(['A', 'B']);
  });

  it('a job id taken by another payload is a 409 before anything is written', async () => {
    const p = depsPlatform();
    await p.enqueue('B', undefined, true);
    const before = written(p);
    await expect(p.flows.create({ id: 'f4', jobs: [node('A'), node('B', ['A'])] })).rejects.toMatchObject({
      status: 409,
      code: 'id_conflict',
    });
    expect(written(p)).toEqual(before);
    expect(p.store.peek('A')).toBeUndefined();
  });

  it('a flow cut short (a job’s write failed) is completed by its replay; every job runs once, in order', async () => {
    const p = depsPlatform();
    const body = { id: 'f5', jobs: [node('D', ['B', 'C']), node('B', ['A']), node('C', ['A']), node('A')] };
    const realCreate = p.store.create.bind(p.store);
    p.store.create = async (job) => {
      if (job.id === 'D') throw new Error('network');
      return realCreate(job);
    };
    await expect(p.flows.create(body)).rejects.toThrow('network');
    expect(p.queue.sent).toEqual([]);
    expect(await p.graph.flow('f5')).toBeUndefined();
    p.store.create = realCreate;
    const replay = await p.flows.create(body);
    expect(replay.created).toBe(true);
    await p.drain();
    expect(p.runs[0]).toBe('A');
    expect(p.runs.at(-1)).toBe('D');
    for (const id of ['A', 'B', 'C', 'D']) expect(p.runs.filter((r) => r === id)).toHaveLength(1);
    expect(p.store.peek('D')?.state).toBe('succeeded');
  });

  it('may name existing jobs as parents', async () => {
    const p = depsPlatform();
    await p.enqueue('X');
    await p.flows.create({ id: 'f3', jobs: [node('Y', ['X'])] });
    await p.drain();
    expect(p.runs).toEqual(['X', 'Y']);
  });

  const refused: [string, unknown, string, string][] = [
    [
      'a cycle',
      { jobs: [node('A'), node('B', ['A', 'D']), node('C', ['B']), node('D', ['C'])] },
      'flow_cycle',
      'jobs.1.dependsOn',
    ],
    ['a job depending on itself', { jobs: [node('A', ['A'])] }, 'self_dependency', 'jobs.0.dependsOn.0'],
    ['an unknown parent', { jobs: [node('A'), node('B', ['A', 'nope'])] }, 'unknown_parent', 'jobs.1.dependsOn.1'],
    [
      'a bad policy',
      { jobs: [node('A'), node('B', [{ id: 'A', onParentFailure: 'retry' }])] },
      'validation_failed',
      'jobs.1.dependsOn.0',
    ],
    ['a duplicate id', { jobs: [node('A'), node('B'), node('A')] }, 'duplicate_node', 'jobs.2.id'],
    ['a job without an id', { jobs: [node('A'), { type: 'node', payload: {} }] }, 'validation_failed', 'jobs.1.id'],
    ['an unknown type', { jobs: [node('A'), node('B', ['A'], { type: 'nope' })] }, 'unknown_type', 'jobs.1.type'],
    [
      'a bad payload',
      { jobs: [node('A'), node('B', ['A'], { payload: { fail: 'yes' } })] },
      'invalid_payload',
      'jobs.1.payload.fail',
    ],
    ['more than 100 jobs', { jobs: Array.from({ length: 101 }, (_, i) => node(`n${i}`)) }, 'validation_failed', 'jobs'],
    ['no jobs', { jobs: [] }, 'validation_failed', 'jobs'],
  ];
  it.each(refused)('refuses %s with a 400 naming the job; nothing is written', async (_, body, code, path) => {
    const p = depsPlatform();
    await p.enqueue('existing');
    const before = written(p);
    const error = await p.flows.create(body).then(
      () => undefined,
      (e: unknown) => e as { status: number; code: string; issues: { path: string }[] },
    );
    expect(error?.status).toBe(400);
    expect(error?.code).toBe(code);
    expect(error?.issues.map((i) => i.path)).toContain(path);
    expect(written(p)).toEqual(before);
    expect(p.store.all().map((j) => j.id)).toEqual(['existing']);
  });
});
