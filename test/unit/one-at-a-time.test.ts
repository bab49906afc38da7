import { describe, expect, it, vi } from 'vitest';
import { createOneAtATime } from '../../shared/core/one-at-a-time';

const tick = () => new Promise((r) => setTimeout(r, 1));

describe('createOneAtATime', () => {
  it('runs the calls of one key one after another, in the order they came', async () => {
    const one = createOneAtATime();
    const events: string[] = [];
    let running = 0;
    let most = 0;
    const call = (name: string) =>
      one.run('k', async () => {
        running += 1;
        most = Math.max(most, running);
        events.push(`start ${name}`);
        await tick();
        events.push(`end ${name}`);
        running -= 1;
        return name;
      });
    const results = await Promise.all([call('a'), call('b'), call('c')]);
    expect(results).toEqual(['a', 'b', 'c']);
    expect(most).toBe(1);
    expect(events).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
    expect(one.busy).toBe(0);
  });

  it('runs calls of different keys at once', async () => {
    const one = createOneAtATime();
    let running = 0;
    let most = 0;
    const call = (key: string) =>
      one.run(key, async () => {
        running += 1;
        most = Math.max(most, running);
        await tick();
        running -= 1;
      });
    await Promise.all([call('x'), call('y'), call('z')]);
    expect(most).toBe(3);
  });

  it('a call that fails rejects its own caller only, and the next call still runs', async () => {
    const one = createOneAtATime();
    const failing = one.run('k', async () => {
      await tick();
      throw new Error('boom');
    });
    const next = one.run('k', async () => 'ran');
    await expect(failing).rejects.toThrow('boom');
    await expect(next).resolves.toBe('ran');
    expect(one.busy).toBe(0);
  });

  it('a call that never settles holds the next one back for maxWaitMs only, and none after it', async () => {
    vi.useFakeTimers();
    try {
      const one = createOneAtATime({ maxWaitMs: 1000 });
      void one.run('k', () => new Promise<never>(() => {}));
      const order: string[] = [];
      const a = one.run('k', async () => order.push('a'));
      const b = one.run('k', async () => order.push('b'));
      await vi.advanceTimersByTimeAsync(999);
      expect(order).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      await Promise.all([a, b]);
      // b waited for a to end, not for another maxWaitMs
      expect(order).toEqual(['a', 'b']);
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});
