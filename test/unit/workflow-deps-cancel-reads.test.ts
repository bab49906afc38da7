/** A cancel of a job that has no children reads nothing of the job graph (the bench's `cancel` path: 0 reads). */
import { describe, expect, it } from 'vitest';
import { depsPlatform } from './workflow-deps-harness';

describe('cancel and the job graph', () => {
  it('reads no registry for a job without children, and releases a parent’s children', async () => {
    const p = depsPlatform();
    await p.enqueue('lonely');
    p.graph.calls.length = 0;
    await p.control.cancel('lonely');
    expect(p.graph.calls).toEqual([]);

    await p.enqueue('parent');
    await p.enqueue('child', ['parent']);
    await p.control.cancel('parent');
    expect(p.store.peek('child')?.state).toBe('failed');
  });
});
