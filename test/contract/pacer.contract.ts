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
  });
}
