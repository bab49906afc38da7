import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
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
      expect(order).toEqual(['a', 'b']);
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  describe('a wait cut short by maxWaitMs', () => {
    beforeEach(() => {
      vi.useFakeTimers();
    });
    afterEach(() => {
      vi.useRealTimers();
    });

    /** Calls of one key, each taking `ms`, recording when each started and how many ran at once. */
    function meter(one: ReturnType<typeof createOneAtATime>) {
      let running = 0;
      let most = 0;
      const starts: [string, number][] = [];
      const call = (name: string, ms: number) =>
        one.run('k', async () => {
          running += 1;
          most = Math.max(most, running);
          starts.push([name, Date.now()]);
          await new Promise((r) => setTimeout(r, ms));
          running -= 1;
        });
      return { call, most: () => most, starts };
    }

    it('after a call that never settles, the calls queued behind it still run one at a time', async () => {
      const one = createOneAtATime({ maxWaitMs: 2000 });
      void one.run('k', () => new Promise<never>(() => {}));
      const m = meter(one);
      const t0 = Date.now();
      const all = Promise.all([m.call('a', 500), m.call('b', 500), m.call('c', 500)]);
      await vi.advanceTimersByTimeAsync(5000);
      await all;
      // the 2 s a call waits count from the start of the one before it, not from its own arrival
      expect(m.starts.map(([n, t]) => [n, t - t0])).toEqual([
        ['a', 2000],
        ['b', 2500],
        ['c', 3000],
      ]);
      expect(m.most()).toBe(1);
    });

    it('a queue of healthy calls longer than maxWaitMs still runs one at a time', async () => {
      // ten writers of one slot (a batch of ten jobs joining one line), 400 ms each: nothing hangs
      const one = createOneAtATime({ maxWaitMs: 2000 });
      const m = meter(one);
      const all = Promise.all(Array.from({ length: 10 }, (_, i) => m.call(`w${i}`, 400)));
      await vi.advanceTimersByTimeAsync(10_000);
      await all;
      expect(m.most()).toBe(1);
      expect(m.starts.map(([, t]) => t - (m.starts[0]?.[1] ?? 0))).toEqual(
        Array.from({ length: 10 }, (_, i) => i * 400),
      );
    });
  });
});
