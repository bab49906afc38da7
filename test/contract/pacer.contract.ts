/**
 * The contract of {@link Pacer} (GCRA per key), run against the in-memory fake
 * (test/unit/contract-fakes.test.ts) and the DynamoDB adapter on DynamoDB Local
 * (test/integration/contract-adapters.test.ts). `fresh` gives a pacer with no memory of earlier
 * calls (another Lambda instance), so the adapter's "try the write it expects first" is crossed.
 */
import { describe, expect, it } from 'vitest';
import { type Pacer, rateLimitPace, throttlePace } from '../../shared/core/pace';

const NOW = Date.parse('2026-06-01T00:00:00.000Z');

export function pacerContract(fresh: () => Promise<Pacer>): void {
  const run = Math.random().toString(36).slice(2, 8);
  let seq = 0;
  const scope = () => {
    seq += 1;
    return `t-${run}-${seq}~t`;
  };

  describe('pacer', () => {
    it('gives a throttle turns by GCRA: a burst at once, then one per interval, each key on its own', async () => {
      const pacer = await fresh();
      const pace = throttlePace({ limit: 5, periodSeconds: 1, burst: 3 }); // T = 200 ms, τ = 400 ms
      const s = scope();
      const turns: number[] = [];
      for (let i = 0; i < 6; i++) turns.push(await pacer.takeTurn({ scope: s, key: 'k', now: NOW, pace }));
      expect(turns.map((t) => t - NOW)).toEqual([0, 0, 0, 200, 400, 600]);
      expect(await pacer.state({ scope: s, key: 'k' })).toBe(NOW + 1200);
      expect(await pacer.takeTurn({ scope: s, key: 'other', now: NOW, pace })).toBe(NOW);
      // later, while still busy: the next turn follows the last
      expect(await pacer.takeTurn({ scope: s, key: 'k', now: NOW + 500, pace })).toBe(NOW + 800);
      // after a quiet spell the key starts afresh
      expect(await pacer.takeTurn({ scope: s, key: 'k', now: NOW + 10_000, pace })).toBe(NOW + 10_000);
      expect(await pacer.state({ scope: s, key: 'k' })).toBe(NOW + 10_200);
      expect(await pacer.state({ scope: s, key: 'never' })).toBeUndefined();
    });

    it('never gives two callers the same turn, whichever instance asks and in whatever order', async () => {
      const pace = throttlePace({ limit: 10, periodSeconds: 1 }); // T = 100 ms, no burst
      const s = scope();
      const pacers = await Promise.all([fresh(), fresh(), fresh()]);
      const turns = await Promise.all(
        Array.from({ length: 12 }, (_, i) => pacers[i % 3]?.takeTurn({ scope: s, key: 'k', now: NOW, pace })),
      );
      expect([...turns].sort((a, b) => (a ?? 0) - (b ?? 0)).map((t) => (t ?? 0) - NOW)).toEqual(
        Array.from({ length: 12 }, (_, i) => i * 100),
      );
    });

    it('lets a rate limit start up to its limit at once, then drops the excess until the rate allows', async () => {
      const pacer = await fresh();
      const pace = rateLimitPace({ limit: 3, periodSeconds: 3 }); // T = 1 s, τ = 2 s
      const s = scope();
      const tries: boolean[] = [];
      for (let i = 0; i < 5; i++) tries.push(await pacer.tryStart({ scope: s, key: 'k', now: NOW, pace }));
      expect(tries).toEqual([true, true, true, false, false]);
      // a refused start changes nothing
      expect(await pacer.state({ scope: s, key: 'k' })).toBe(NOW + 3000);
      expect(await pacer.tryStart({ scope: s, key: 'k', now: NOW + 999, pace })).toBe(false);
      expect(await pacer.tryStart({ scope: s, key: 'k', now: NOW + 1000, pace })).toBe(true);
      const other = await fresh(); // an instance that never saw the key
      expect(await other.tryStart({ scope: s, key: 'k', now: NOW + 1500, pace })).toBe(false);
      expect(await other.tryStart({ scope: s, key: 'k', now: NOW + 60_000, pace })).toBe(true);
    });
    describe('a pace set at run time', () => {
      const runtime = (limit: number, periodSeconds: number, burst?: number) => ({
        limit,
        periodSeconds,
        ...(burst === undefined ? {} : { burst }),
        pace: throttlePace({ limit, periodSeconds, ...(burst === undefined ? {} : { burst }) }),
        by: 'arn:aws:iam::123456789012:role/ops',
        at: NOW,
      });

      it('replaces the callers’ pace from the next turn, for a pacer that has seen the key and one that has not', async () => {
        const spec = throttlePace({ limit: 10, periodSeconds: 1 }); // T = 100 ms
        const s = scope();
        const a = await fresh();
        expect(await a.takeTurn({ scope: s, key: 'k', now: NOW, pace: spec })).toBe(NOW);
        expect(await a.takeTurn({ scope: s, key: 'k', now: NOW, pace: spec })).toBe(NOW + 100);
        // the tenant is slowed down to 1 per 2 s, while the platform runs
        await (await fresh()).setPace({ scope: s, key: 'k', runtime: runtime(1, 2), spec, now: NOW });
        expect(await a.runtimePace({ scope: s, key: 'k' })).toMatchObject({ limit: 1, periodSeconds: 2 });
        // the two turns given count as two at the new pace (the TAT is 2 intervals ahead: 4 s
        // now), then one per 2 s, whichever pacer asks
        expect(await a.takeTurn({ scope: s, key: 'k', now: NOW, pace: spec })).toBe(NOW + 4_000);
        const b = await fresh();
        expect(await b.takeTurn({ scope: s, key: 'k', now: NOW, pace: spec })).toBe(NOW + 6_000);
        expect(await a.takeTurn({ scope: s, key: 'k', now: NOW, pace: spec })).toBe(NOW + 8_000);
        // removed: the spec's pace again, for both (the 5 turns ahead: 500 ms at the spec's)
        await (await fresh()).setPace({ scope: s, key: 'k', runtime: undefined, spec, now: NOW });
        expect(await b.runtimePace({ scope: s, key: 'k' })).toBeUndefined();
        expect(await b.takeTurn({ scope: s, key: 'k', now: NOW, pace: spec })).toBe(NOW + 500);
        expect(await a.takeTurn({ scope: s, key: 'k', now: NOW, pace: spec })).toBe(NOW + 600);
        // set again, then read back whole
        await a.setPace({ scope: s, key: 'k', runtime: runtime(3, 1, 2), spec, now: NOW });
        expect(await b.runtimePace({ scope: s, key: 'k' })).toEqual(runtime(3, 1, 2));
      });

      it('lets a raised rate limit accept more at once', async () => {
        const spec = rateLimitPace({ limit: 2, periodSeconds: 60 });
        const s = scope().replace(/~t$/, '~r');
        const p = await fresh();
        const accept = async (n: number) => {
          let ok = 0;
          for (let i = 0; i < n; i++) if (await p.tryStart({ scope: s, key: 'k', now: NOW, pace: spec })) ok += 1;
          return ok;
        };
        expect(await accept(5)).toBe(2);
        const raised = { ...runtime(5, 60), pace: rateLimitPace({ limit: 5, periodSeconds: 60 }) };
        // the 2 taken count as 2 of the new 5
        await (await fresh()).setPace({ scope: s, key: 'k', runtime: raised, spec, now: NOW });
        expect(await accept(5)).toBe(3);
        // removing a pace from a key that never had an item creates none
        const none = await fresh();
        await none.setPace({ scope: s, key: 'never', runtime: undefined, spec, now: NOW });
        expect(await none.state({ scope: s, key: 'never' })).toBeUndefined();
        expect(await none.runtimePace({ scope: s, key: 'never' })).toBeUndefined();
      });
    });
  });
}
