/**
 * The supervisor's look at a child still waiting for its parents (`reconcileChild`), on the
 * in-memory ports: it writes nothing when every edge is registered or counted, and heals a lost
 * registration with a live parent, or a lost release of a finished one.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../shared/core/clock';
import { incarnationOf } from '../../shared/core/table';
import { RECONCILE_READ_SLOTS, reconcileChild } from '../../shared/dispatch/release';
import { createLogger } from '../../shared/logger';
import { createWorker } from '../../shared/runtime/worker';
import { captureLogs, FakeJobQueue, FakeJobStore, newJob, sqsRecord, testConfig } from '../support/fakes';
import { depsPlatform, nodeSpec, T0 } from './workflow-deps-harness';

const log = createLogger({ level: 'silent' });
/** The incarnation of a job created at T0. */
const INC0 = incarnationOf(new Date(T0).toISOString());
const WRITES = ['putParents', 'addChild', 'fillSlot', 'putChildren', 'release', 'markReleased', 'putFlow'];

function setup() {
  const p = depsPlatform();
  const releaseDeps = { graph: p.graph, queue: p.queue, routes: p.config.routes, retentionDays: 30 };
  return { p, releaseDeps };
}

describe('reconcileChild', () => {
  it('only reads when the child is registered with its live parents and counted by its finished ones', async () => {
    const { p, releaseDeps } = setup();
    await p.enqueue('done');
    await p.enqueue('live');
    await p.drain(1); // `done` runs and succeeds; `live` waits in the queue
    await p.enqueue('child', ['done', 'live']);
    const child = await p.store.get('child');
    expect(child).toMatchObject({ state: 'waiting', pendingParents: 1, parentsResolved: [0] });
    const before = p.graph.calls.length;
    const out = await reconcileChild(releaseDeps, child as NonNullable<typeof child>, T0, log);
    expect(out).toEqual({ released: 0, registered: 0 });
    const calls = p.graph.calls.slice(before).map((c) => c.method);
    expect(calls.filter((m) => WRITES.includes(m))).toEqual([]);
    expect(calls).toContain('children'); // the live parent's registry was looked at
  });

  it('registers a child with a live parent that lost its registration; the parent’s end then releases it', async () => {
    const { p, releaseDeps } = setup();
    await p.enqueue('parent');
    // the child as the API wrote it before it died: parents item and waiting status, no registration
    const child = newJob({ id: 'child', type: 'node', state: 'waiting', pendingParents: 1 }, T0);
    await p.graph.putParents({
      child: 'child',
      incarnation: INC0,
      parents: [{ id: 'parent', policy: 'fail' }],
      expiresAt: 0,
    });
    await p.store.create(child);
    expect(await reconcileChild(releaseDeps, child, T0, log)).toEqual({ released: 0, registered: 1 });
    await p.drain();
    expect(p.runs).toEqual(['parent', 'child']);
  });

  it('releases the edge of a finished parent whose release never knew the child', async () => {
    const { p, releaseDeps } = setup();
    await p.enqueue('parent');
    await p.drain();
    const child = newJob({ id: 'child', type: 'node', state: 'waiting', pendingParents: 1 }, T0);
    await p.graph.putParents({
      child: 'child',
      incarnation: INC0,
      parents: [{ id: 'parent', policy: 'fail' }],
      expiresAt: 0,
    });
    await p.store.create(child);
    expect(await reconcileChild(releaseDeps, child, T0 + 1000, log)).toEqual({ released: 1, registered: 0 });
    await p.drain();
    expect(p.runs).toEqual(['parent', 'child']);
    // a second look changes nothing: the child no longer waits
    const again = await p.store.get('child');
    expect(again?.state).toBe('succeeded');
  });
});

describe('reconcileChild, costs and races', () => {
  it('registers a child again without reading the registry of a parent with more than 100 children', async () => {
    const { p, releaseDeps } = setup();
    await p.enqueue('parent');
    for (let i = 0; i < RECONCILE_READ_SLOTS; i++) await p.enqueue(`c${i}`, ['parent']);
    const child = (await p.store.get('c0')) as NonNullable<Awaited<ReturnType<typeof p.store.get>>>;
    await p.enqueue('one-more', ['parent']); // 101 children
    const before = p.graph.calls.length;
    expect(await reconcileChild(releaseDeps, child, T0, log)).toEqual({ released: 0, registered: 1 });
    expect(p.graph.calls.slice(before).map((c) => c.method)).not.toContain('children');
    await p.drain();
    // the duplicate entry is counted once: each child ran once, after the parent
    expect(p.runs[0]).toBe('parent');
    expect(p.runs.filter((id) => id === 'c0')).toHaveLength(1);
    expect(p.runs).toHaveLength(RECONCILE_READ_SLOTS + 2);
  });

  it('counts nothing healed when the parent’s own release counted the edge after the child was read', async () => {
    const { p, releaseDeps } = setup();
    await p.enqueue('parent');
    await p.enqueue('child', ['parent']);
    const stale = (await p.store.get('child')) as NonNullable<Awaited<ReturnType<typeof p.store.get>>>;
    p.queue.sent.splice(0); // hold the messages: the release runs below, as the worker would
    await p.worker({ Records: [sqsRecord({ v: 1, id: 'parent', type: 'node' })] });
    expect((await p.store.get('child'))?.state).toBe('queued');
    expect(await reconcileChild(releaseDeps, stale, T0, log)).toEqual({ released: 0, registered: 0 });
  });
});

describe('a worker without the job graph', () => {
  it('logs an error when a job it ran has children it cannot release', async () => {
    const store = new FakeJobStore();
    const logs = captureLogs();
    const worker = createWorker(
      { spec: nodeSpec, run: async () => ({ ok: true }) },
      {
        config: testConfig(['node']),
        store,
        queue: new FakeJobQueue(),
        clock: new ManualClock(T0),
        owner: 'w',
        logger: createLogger({ level: 'info', sink: logs.sink }),
      },
    );
    await store.create(newJob({ id: 'parent', type: 'node', childCount: 2 }, T0));
    await worker({ Records: [sqsRecord({ v: 1, id: 'parent', type: 'node' })] });
    expect((await store.get('parent'))?.state).toBe('succeeded');
    expect(logs.lines.filter((l) => l.level === 'error').map((l) => l.message)).toEqual([
      'job has children but this worker has no job graph (WorkerDeps.graph): they are not released',
    ]);
  });
});
