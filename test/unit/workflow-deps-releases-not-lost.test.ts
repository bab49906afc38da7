import { describe, expect, it } from 'vitest';
import { depsPlatform } from './workflow-deps-harness';

describe('dependencies: releases that must not be lost', () => {
  it('a child ended by its parent hands off its own children even when its first hand-off send failed', async () => {
    const p = depsPlatform();
    await p.enqueue('A', undefined, true); // A fails for good
    await p.enqueue('B', ['A']); // fail policy: B ends failed
    await p.enqueue('C', [{ id: 'B', onParentFailure: 'ignore' }]); // C should run once B ended
    p.queue.failNext('send', new Error('SQS throttled')); // the next send is B's hand-off
    await p.drain();
    expect(p.store.peek('A')?.state).toBe('failed');
    expect(p.store.peek('B')?.state).toBe('failed');
    // A's message came back and its release ran again: refused for B, which is handed off again
    expect(p.store.peek('A')?.childrenReleased).toBe(1);
    expect(p.store.peek('B')?.childCount).toBe(1);
    expect(p.store.peek('B')?.childrenReleased).toBe(1);
    // C must not wait forever
    expect(p.store.peek('C')?.state).toBe('succeeded');
  });

  it('POST /flows: a flow parent that finishes before its in-flow child is written still releases it', async () => {
    const p = depsPlatform();
    await p.enqueue('X'); // an existing job outside the flow, queued
    const create = p.store.create.bind(p.store);
    let raced = false;
    p.store.create = (async (job: Parameters<typeof create>[0]) => {
      if (job.id === 'C' && !raced) {
        raced = true;
        await p.drain(); // X runs and releases B; B runs, succeeds, releases its (pre-filled) slot for C: C missing
      }
      return create(job);
    }) as typeof p.store.create;
    await p.flows.create({
      id: 'f1',
      jobs: [
        { id: 'B', type: 'node', payload: {}, dependsOn: ['X'] },
        { id: 'C', type: 'node', payload: {}, dependsOn: ['B'] },
      ],
    });
    await p.drain();
    expect(p.store.peek('B')?.state).toBe('succeeded');
    expect(p.store.peek('B')?.childrenReleased).toBe(1);
    // every parent of C ended (succeeded), C must run
    expect(p.store.peek('C')?.state).toBe('succeeded');
  });
});

describe('dependencies: flows with nodes ended at creation', () => {
  it('a flow node ended at its creation by a failed outside parent releases its in-flow children', async () => {
    const p = depsPlatform();
    await p.enqueue('X', undefined, true);
    await p.drain();
    expect(p.store.peek('X')?.state).toBe('failed');
    await p.flows.create({
      id: 'f2',
      jobs: [
        { id: 'B', type: 'node', payload: {}, dependsOn: ['X'] }, // fail policy: B is created failed
        { id: 'C', type: 'node', payload: {}, dependsOn: [{ id: 'B', onParentFailure: 'ignore' }] },
      ],
    });
    await p.drain();
    expect(p.store.peek('B')?.state).toBe('failed');
    expect(p.store.peek('B')?.childCount).toBe(1);
    // B ended, C (ignore) must run
    expect(p.store.peek('C')?.state).toBe('succeeded');
  });
});

describe('dependencies: a cancel whose release was lost', () => {
  it('a retried cancel (a 409) runs the release that an API Lambda dying after the cancel write left undone', async () => {
    const p = depsPlatform();
    await p.enqueue('X');
    await p.enqueue('P', ['X']); // P waits for X: no message of its own
    await p.enqueue('C', [{ id: 'P', onParentFailure: 'ignore' }]);
    // the Lambda dies right after the cancel write
    const deps = (p.control as unknown as { deps: { control: { cancel: (i: unknown) => Promise<unknown> } } }).deps;
    const real = deps.control.cancel.bind(deps.control);
    deps.control.cancel = async (input: unknown) => {
      await real(input);
      deps.control.cancel = real;
      throw new Error('Lambda timed out');
    };
    await expect(p.control.cancel('P')).rejects.toThrow('Lambda timed out');
    p.clock.advance(1000);
    // the client retries the cancel
    await expect(p.control.cancel('P')).rejects.toThrow();
    await p.drain();
    expect(p.store.peek('P')?.state).toBe('cancelled');
    expect(p.store.peek('X')?.state).toBe('succeeded');
    // P ended, C (ignore) must run
    expect(p.store.peek('C')?.state).toBe('succeeded');
  });
});

describe('dependencies: a cancel whose release was lost, with no message left', () => {
  it('a retried cancel (a 409) of a scheduled parent runs the release the first cancel never ran', async () => {
    const p = depsPlatform();
    await p.jobs.enqueue({ type: 'node', id: 'P', payload: {}, delaySeconds: 3600 }); // scheduled: no SQS message
    await p.enqueue('C', [{ id: 'P', onParentFailure: 'ignore' }]);
    // the Lambda dies after the cancel write and the schedule's deletion, before the release
    const control = p.control as unknown as { releaseCancelled: (...args: unknown[]) => Promise<void> };
    const real = control.releaseCancelled.bind(p.control);
    control.releaseCancelled = async () => {
      control.releaseCancelled = real;
      throw new Error('Lambda timed out');
    };
    await expect(p.control.cancel('P')).rejects.toThrow('Lambda timed out');
    await p.drain();
    expect(p.store.peek('C')?.state).toBe('waiting');
    p.clock.advance(1000);
    // the client retries the cancel: a 409, and the release is done
    await expect(p.control.cancel('P')).rejects.toThrow();
    await p.drain();
    expect(p.store.peek('P')?.state).toBe('cancelled');
    expect(p.store.peek('P')?.childrenReleased).toBe(1);
    expect(p.store.peek('C')?.state).toBe('succeeded');
  });
});

describe('dependencies: a registration replayed after it applied', () => {
  it('a slot fill whose response was lost and whose retry is refused registers the child, no 500', async () => {
    const p = depsPlatform();
    await p.enqueue('A');
    const fill = p.graph.fillSlot.bind(p.graph);
    // the first try applies, its response is lost, and the SDK's retry is what the caller sees
    p.graph.fillSlot = async (input) => {
      await fill(input);
      return fill(input);
    };
    await p.enqueue('B', ['A']);
    await p.drain();
    expect(p.store.peek('A')?.childrenReleased).toBe(1);
    expect(p.store.peek('B')?.state).toBe('succeeded');
  });
});

describe('dependencies: an id taken by a job with parents', () => {
  it('a request with the id of an existing job and other parents is a 409, and leaves its parents item as it was', async () => {
    const p = depsPlatform();
    await p.enqueue('P1');
    await p.enqueue('P2');
    await p.enqueue('C', ['P1']);
    // the same id and payload, other parents: not a replay
    await expect(p.enqueue('C', ['P2'])).rejects.toMatchObject({ status: 409, code: 'id_conflict' });
    // another payload under the same id: the 409 of any enqueue, and still nothing rewritten
    await expect(p.enqueue('C', ['P2'], true)).rejects.toMatchObject({ status: 409, code: 'id_conflict' });
    expect(p.graph.storedParents('C')).toEqual([{ id: 'P1', policy: 'fail' }]);
    // a true replay still answers as before
    expect((await p.enqueue('C', ['P1'])).created).toBe(false);
    await p.drain();
    expect(p.runs.filter((id) => id === 'C')).toHaveLength(1);
    expect(p.runs.indexOf('C')).toBeGreaterThan(p.runs.indexOf('P1'));
  });

  it('a flow replay that changes an existing job’s parents is a 409 before anything is written', async () => {
    const p = depsPlatform();
    const jobs = (parent: string) => [
      { id: 'A', type: 'node', payload: {} },
      { id: 'B', type: 'node', payload: {} },
      { id: 'C', type: 'node', payload: {}, dependsOn: [parent] },
    ];
    await p.flows.create({ id: 'f', jobs: jobs('A') });
    const writes = p.graph.calls.length;
    await expect(p.flows.create({ id: 'f', jobs: jobs('B') })).rejects.toMatchObject({
      status: 409,
      code: 'id_conflict',
    });
    expect(p.graph.calls.slice(writes).filter((c) => c.method === 'putParents' || c.method === 'putChildren')).toEqual(
      [],
    );
    expect(p.graph.storedParents('C')).toEqual([{ id: 'A', policy: 'fail' }]);
  });
});
