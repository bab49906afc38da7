/**
 * Job dependencies end to end on the in-memory ports: enqueue with `dependsOn`, the worker's
 * release after a parent ends, policies, cancel propagation, replays, and a wide fan-out/fan-in.
 */
import { describe, expect, it } from 'vitest';
import type { ParentPolicy } from '../../shared/core/dependencies';
import { incarnationOf } from '../../shared/core/table';
import { releaseChildren } from '../../shared/dispatch/release';
import { depsPlatform } from './workflow-deps-harness';

/** A → (B, C) → D, written before anything runs. */
async function diamond(p: ReturnType<typeof depsPlatform>, policy: ParentPolicy = 'fail', bFails = false) {
  await p.enqueue('A');
  await p.enqueue('B', ['A'], bFails);
  await p.enqueue('C', ['A']);
  await p.enqueue('D', [{ id: 'B', onParentFailure: policy }, 'C']);
}

const claimsOf = (p: ReturnType<typeof depsPlatform>, id: string) =>
  p.store.calls.filter((c) => c.method === 'claim' && c.id === id).length;
const sendsOf = (p: ReturnType<typeof depsPlatform>, id: string) =>
  p.queue.sent.filter((s) => s.message.id === id).length;

describe('dependsOn: a diamond A → (B, C) → D', () => {
  it('D waits, runs once after both B and C, and sees both results', async () => {
    const p = depsPlatform();
    await diamond(p);
    // the children wait, with no message, until their parents' release
    for (const id of ['B', 'C', 'D']) {
      expect(p.store.peek(id)?.state).toBe('waiting');
      expect(sendsOf(p, id)).toBe(0);
    }
    expect(p.store.peek('D')?.pendingParents).toBe(2);
    expect(p.store.peek('A')?.childCount).toBe(2);
    await p.drain();
    expect(p.runs.filter((id) => id === 'D')).toHaveLength(1);
    expect(p.runs.indexOf('D')).toBeGreaterThan(p.runs.indexOf('B'));
    expect(p.runs.indexOf('D')).toBeGreaterThan(p.runs.indexOf('C'));
    expect(p.runs[0]).toBe('A');
    expect(p.parentsSeen.get('D')).toEqual({
      B: { state: 'succeeded', result: { ran: 'B' } },
      C: { state: 'succeeded', result: { ran: 'C' } },
    });
    for (const id of ['A', 'B', 'C', 'D']) expect(p.store.peek(id)?.state).toBe('succeeded');
    expect(sendsOf(p, 'D')).toBe(1);
    expect(p.store.peek('A')?.childrenReleased).toBe(2);
    expect(p.store.peek('D')?.pendingParents).toBeUndefined();
  });

  it('policy fail: B fails, D ends failed without running, naming B', async () => {
    const p = depsPlatform();
    await diamond(p, 'fail', true);
    await p.drain();
    expect(p.runs).not.toContain('D');
    const d = p.store.peek('D');
    expect(d?.state).toBe('failed');
    expect(d?.lastError?.reason).toBe('parent_failed');
    expect(d?.lastError?.message).toContain('B');
    expect(d?.attempts).toBe(0);
    expect(p.store.peek('C')?.state).toBe('succeeded');
  });

  it('policy cancel: B fails, D ends cancelled without running', async () => {
    const p = depsPlatform();
    await diamond(p, 'cancel', true);
    await p.drain();
    expect(p.runs).not.toContain('D');
    expect(p.store.peek('D')?.state).toBe('cancelled');
  });

  it('policy ignore: B fails, D runs once after C and sees B failed', async () => {
    const p = depsPlatform();
    await diamond(p, 'ignore', true);
    await p.drain();
    expect(p.runs.filter((id) => id === 'D')).toHaveLength(1);
    expect(p.runs.indexOf('D')).toBeGreaterThan(p.runs.indexOf('C'));
    expect(p.store.peek('D')?.state).toBe('succeeded');
    expect(p.parentsSeen.get('D')?.B?.state).toBe('failed');
    expect(p.parentsSeen.get('D')?.C).toEqual({ state: 'succeeded', result: { ran: 'C' } });
  });

  it('a cancel of A propagates by each edge’s policy, and down the graph', async () => {
    const p = depsPlatform();
    await p.enqueue('A');
    await p.enqueue('B', [{ id: 'A', onParentFailure: 'cancel' }]);
    await p.enqueue('C', [{ id: 'A', onParentFailure: 'ignore' }]);
    await p.enqueue('D', ['B', 'C']);
    await p.enqueue('E', [{ id: 'A', onParentFailure: 'fail' }]);
    await p.control.cancel('A');
    expect(p.store.peek('B')?.state).toBe('cancelled');
    expect(p.store.peek('E')?.state).toBe('failed');
    expect(p.store.peek('C')?.state).toBe('queued');
    await p.drain();
    expect(p.runs).toEqual(['C']);
    // B, ended by its policy, released D through its own message (policy fail)
    expect(p.store.peek('D')?.state).toBe('failed');
    expect(p.store.peek('D')?.lastError?.message).toContain('B');
    expect(p.store.peek('B')?.childrenReleased).toBe(1);
  });

  it('a parent that expires (not started by its dispatchBy) releases its children by policy', async () => {
    const p = depsPlatform();
    await p.jobs.enqueue({
      type: 'node',
      id: 'A',
      payload: {},
      dispatchBy: new Date(p.clock.now() + 1000).toISOString(),
    });
    await p.enqueue('B', ['A']);
    await p.enqueue('C', [{ id: 'A', onParentFailure: 'ignore' }]);
    p.clock.advance(5000);
    await p.drain();
    expect(p.store.peek('A')?.state).toBe('expired');
    expect(p.store.peek('B')?.state).toBe('failed');
    expect(p.store.peek('B')?.lastError?.message).toContain('expired');
    expect(p.runs).toEqual(['C']);
  });

  it('a cancelled waiting child stays cancelled; its parent’s release leaves it alone', async () => {
    const p = depsPlatform();
    await p.enqueue('A');
    await p.enqueue('B', ['A']);
    await p.control.cancel('B');
    await p.drain();
    expect(p.runs).toEqual(['A']);
    expect(p.store.peek('B')?.state).toBe('cancelled');
    expect(sendsOf(p, 'B')).toBe(0);
  });
});

describe('operator retry of a child', () => {
  it('a child ended by its parent, retried, runs once (its parents are done)', async () => {
    const p = depsPlatform();
    await p.enqueue('A', undefined, true);
    await p.enqueue('B', ['A']);
    await p.drain();
    expect(p.store.peek('B')?.state).toBe('failed');
    await p.control.retry('B');
    await p.drain();
    expect(p.runs).toEqual(['A', 'B']);
    expect(p.store.peek('B')?.state).toBe('succeeded');
  });

  it('a child cancelled while it waited, retried, runs now; its parent’s later release leaves it alone', async () => {
    const p = depsPlatform();
    await p.jobs.enqueue({ type: 'node', id: 'A', payload: {}, delaySeconds: 60 });
    await p.enqueue('B', ['A']);
    await p.control.cancel('B');
    await p.control.retry('B');
    expect(p.store.peek('B')?.pendingParents).toBeUndefined();
    await p.drain();
    p.clock.advance(60_000);
    await p.drain();
    expect(p.runs.filter((id) => id === 'B')).toHaveLength(1);
    expect(p.store.peek('A')?.state).toBe('succeeded');
    expect(p.store.peek('B')?.state).toBe('succeeded');
  });
});

describe('dependsOn at enqueue', () => {
  it('parents already finished resolve at once: all succeeded → queued and sent; a failed one ends it', async () => {
    const p = depsPlatform();
    await p.enqueue('A');
    await p.enqueue('F', undefined, true);
    await p.drain();
    const ready = await p.enqueue('B', ['A']);
    expect(ready.job.state).toBe('queued');
    expect(sendsOf(p, 'B')).toBe(1);
    const failed = await p.enqueue('C', ['A', 'F']);
    expect(failed.job.state).toBe('failed');
    expect(failed.job.lastError?.reason).toBe('parent_failed');
    const cancelled = await p.enqueue('D', [{ id: 'F', onParentFailure: 'cancel' }]);
    expect(cancelled.job.state).toBe('cancelled');
    const ignoring = await p.enqueue('E', ['A', { id: 'F', onParentFailure: 'ignore' }]);
    expect(ignoring.job.state).toBe('queued');
    // a mix: one finished, one still to run
    await p.enqueue('G');
    const mixed = await p.enqueue('H', ['A', 'G']);
    expect(mixed.job.state).toBe('waiting');
    expect(p.store.peek('H')?.pendingParents).toBe(1);
    await p.drain();
    expect(p.store.peek('H')?.state).toBe('succeeded');
    expect(p.store.peek('C')?.state).toBe('failed');
    expect(p.runs).not.toContain('C');
    expect(p.runs).not.toContain('D');
  });

  it('refuses unknown parents, duplicates and itself with a 400 naming the entry; nothing is written', async () => {
    const p = depsPlatform();
    await p.enqueue('A');
    const before = p.store.all().length;
    const cases = [
      { dependsOn: ['A', 'nope'], code: 'unknown_parent', path: 'dependsOn.1' },
      { dependsOn: ['A', 'A'], code: 'duplicate_parent', path: 'dependsOn.1' },
      { dependsOn: ['X'], code: 'self_dependency', path: 'dependsOn.0' },
    ];
    for (const c of cases) {
      await expect(
        p.jobs.enqueue({ type: 'node', id: 'X', payload: {}, dependsOn: c.dependsOn }),
      ).rejects.toMatchObject({ status: 400, code: c.code, issues: [expect.objectContaining({ path: c.path })] });
    }
    expect(p.store.all().length).toBe(before);
    expect(p.graph.storedParents('X')).toBeUndefined();
  });

  it('a replay of a child whose registrations were lost registers it again; it runs once', async () => {
    const p = depsPlatform();
    await p.enqueue('A');
    p.graph.failNext('addChild', new Error('network'));
    await expect(p.enqueue('B', ['A'])).rejects.toThrow('network');
    expect(p.store.peek('B')?.state).toBe('waiting');
    expect(p.store.peek('A')?.childCount).toBeUndefined();
    const again = await p.enqueue('B', ['A']);
    expect(again.created).toBe(false);
    expect(p.store.peek('A')?.childCount).toBe(1);
    await p.drain();
    expect(p.runs).toEqual(['A', 'B']);
  });

  it('a registration counted but not yet in its slot when the parent releases: the slot is sealed, and the registration resolves its edge itself', async () => {
    for (const [policy, parentFails, expected] of [
      ['fail', false, 'succeeded'],
      ['fail', true, 'failed'],
      ['cancel', true, 'cancelled'],
    ] as const) {
      const p = depsPlatform();
      await p.enqueue('A', undefined, parentFails);
      const realFill = p.graph.fillSlot.bind(p.graph);
      p.graph.fillSlot = async (input) => {
        // A runs, ends and releases between the registration's two writes
        await p.drain();
        return realFill(input);
      };
      await p.enqueue('B', [{ id: 'A', onParentFailure: policy }]);
      p.graph.fillSlot = realFill;
      expect(p.graph.registry('A')).toEqual(['tombstone']);
      expect(p.store.peek('A')?.childrenReleased).toBe(1);
      await p.drain();
      expect(p.store.peek('B')?.state).toBe(expected);
      expect(p.runs.filter((id) => id === 'B')).toHaveLength(expected === 'succeeded' ? 1 : 0);
      expect(sendsOf(p, 'B')).toBe(expected === 'succeeded' ? 1 : 0);
    }
  });

  it('a registration that lands in its slot before the parent releases is released with the others', async () => {
    const p = depsPlatform();
    await p.enqueue('A');
    await p.enqueue('B', ['A']);
    const incarnation = incarnationOf(p.store.peek('B')?.createdAt ?? '');
    expect(p.graph.registry('A')).toEqual([{ child: 'B', policy: 'fail', index: 0, parents: 1, incarnation }]);
    await p.drain();
    expect(p.runs).toEqual(['A', 'B']);
    expect(sendsOf(p, 'B')).toBe(1);
  });

  it('a registration that finds its parent finished resolves the edge itself', async () => {
    const p = depsPlatform();
    await p.enqueue('A');
    // A finishes between the enqueue's read of it and the registration
    const realAdd = p.graph.addChild.bind(p.graph);
    p.graph.addChild = async (input) => {
      await p.drain();
      return realAdd(input);
    };
    const out = await p.enqueue('B', ['A']);
    expect(out.job.state).toBe('queued');
    p.graph.addChild = realAdd;
    await p.drain();
    expect(p.runs).toEqual(['A', 'B']);
  });
});

describe('dependsOn in a batch', () => {
  it('parents in the same batch, listed after their children, are written first; all run in order', async () => {
    const p = depsPlatform();
    const out = await p.batch.enqueueAll(
      [
        { type: 'node', id: 'C', payload: {}, dependsOn: ['B', 'A'] },
        { type: 'node', id: 'B', payload: {}, dependsOn: ['A'] },
        { type: 'node', id: 'A', payload: {} },
      ],
      'r1',
    );
    expect(out.results.map((r) => r.status)).toEqual(['created', 'created', 'created']);
    expect(p.store.peek('C')?.pendingParents).toBe(2);
    // only the root was sent
    expect(p.queue.sent.map((s) => s.message.id)).toEqual(['A']);
    await p.drain();
    expect(p.runs).toEqual(['A', 'B', 'C']);
  });

  it('a cycle within the batch: its items are refused (flow_cycle) and not written; the others are', async () => {
    const p = depsPlatform();
    const out = await p.batch.enqueueAll(
      [
        { type: 'node', id: 'X', payload: {}, dependsOn: ['Y'] },
        { type: 'node', id: 'Y', payload: {}, dependsOn: ['X'] },
        { type: 'node', id: 'Z', payload: {}, dependsOn: ['Y'] },
        { type: 'node', id: 'R', payload: {} },
      ],
      'r2',
    );
    expect(out.results.map((r) => (r.status === 'error' ? r.error.code : r.status))).toEqual([
      'flow_cycle',
      'flow_cycle',
      'flow_cycle',
      'created',
    ]);
    expect(p.store.all().map((j) => j.id)).toEqual(['R']);
  });
});

describe('release replays', () => {
  it('a duplicated or replayed release never releases a child twice', async () => {
    const p = depsPlatform();
    await p.enqueue('A');
    await p.enqueue('B', ['A']);
    await p.enqueue('C', ['A', 'B']);
    await p.drain();
    // the parent's message delivered again, and its release run again by hand
    p.queue.sent.push({ ...(p.queue.sent[0] as (typeof p.queue.sent)[number]) });
    await p.drain();
    const log = p.logs.length;
    await releaseChildren(
      { graph: p.graph, queue: p.queue, routes: { node: { queueUrl: 'q', queueArn: 'a' } }, retentionDays: 30 },
      'A',
      p.clock.now(),
      (await import('../../shared/logger')).createLogger({ level: 'error' }),
    );
    expect(p.logs.length).toBe(log);
    for (const id of ['B', 'C']) {
      expect(p.runs.filter((r) => r === id)).toHaveLength(1);
      expect(sendsOf(p, id)).toBe(1);
      expect(claimsOf(p, id)).toBe(1);
    }
  });

  it('a release that died half way runs again from the parent’s message; each edge counts once', async () => {
    const p = depsPlatform();
    await p.enqueue('A');
    for (const id of ['B', 'C', 'D']) await p.enqueue(id, ['A']);
    await p.enqueue('J', ['B', 'C', 'D', 'A']);
    // the third edge's write fails: the parent's message comes back and the release runs again
    const realRelease = p.graph.release.bind(p.graph);
    let n = 0;
    p.graph.release = async (input) => {
      n += 1;
      if (n === 3) throw new Error('throttled');
      return realRelease(input);
    };
    await p.drain();
    expect(p.deliveries.filter((d) => d.id === 'A').map((d) => d.retry)).toEqual([true, false]);
    for (const id of ['B', 'C', 'D', 'J']) {
      expect(p.runs.filter((r) => r === id)).toHaveLength(1);
      expect(p.store.peek(id)?.state).toBe('succeeded');
    }
    expect(p.runs.at(-1)).toBe('J');
    expect(claimsOf(p, 'J')).toBe(1);
  });
});

describe('fan-out / fan-in: 1 → 998 → 1', () => {
  it('the join runs exactly once, after the last child', async () => {
    const p = depsPlatform();
    const width = 998;
    await p.enqueue('root');
    const children = Array.from({ length: width }, (_, i) => `c${i}`);
    for (const id of children) await p.enqueue(id, ['root']);
    await p.enqueue('join', children);
    expect(p.store.peek('join')?.pendingParents).toBe(width);
    expect(p.store.peek('root')?.childCount).toBe(width);
    await p.drain();
    expect(p.runs.filter((id) => id === 'join')).toHaveLength(1);
    expect(p.runs.at(-1)).toBe('join');
    expect(p.runs).toHaveLength(width + 2);
    expect(claimsOf(p, 'join')).toBe(1);
    expect(sendsOf(p, 'join')).toBe(1);
    expect(Object.keys(p.parentsSeen.get('join') ?? {})).toHaveLength(width);
  }, 60_000);
});
