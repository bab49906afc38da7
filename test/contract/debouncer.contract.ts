/**
 * The contract of {@link Debouncer}, run against the in-memory fake
 * (test/unit/contract-fakes.test.ts) and the DynamoDB adapter on DynamoDB Local
 * (test/integration/contract-adapters.test.ts).
 */
import { describe, expect, it } from 'vitest';
import type { Debouncer } from '../../shared/core/debounce';

const NOW = Date.parse('2026-06-01T00:00:00.000Z');

export function debouncerContract(setup: () => Promise<Debouncer>): void {
  const run = Math.random().toString(36).slice(2, 8);
  let seq = 0;
  const scope = () => {
    seq += 1;
    return `t-${run}-${seq}~d`;
  };

  describe('debouncer', () => {
    it('opens a window with its first job, hands back the run each newer job replaces, and keeps the window start', async () => {
      const d = await setup();
      const s = scope();
      expect(await d.open({ scope: s, key: 'k', jobId: 'a', now: NOW })).toEqual({ first: NOW, seq: 1 });
      expect(await d.open({ scope: s, key: 'k', jobId: 'b', now: NOW + 5 })).toEqual({
        previous: 'a',
        first: NOW,
        seq: 2,
      });
      // the same job again (a replay): nothing replaced, but the open counts
      expect(await d.open({ scope: s, key: 'k', jobId: 'b', now: NOW + 6 })).toEqual({ first: NOW, seq: 3 });
      // each key counts its own opens
      expect(await d.open({ scope: s, key: 'other', jobId: 'x', now: NOW + 7 })).toEqual({ first: NOW + 7, seq: 1 });
      expect(await d.state({ scope: s, key: 'k' })).toEqual({ run: 'b', first: NOW });
      expect(await d.state({ scope: s, key: 'never' })).toEqual({});
    });

    it('closes a window only for its current run; the next job then opens a new one', async () => {
      const d = await setup();
      const s = scope();
      await d.open({ scope: s, key: 'k', jobId: 'a', now: NOW });
      await d.open({ scope: s, key: 'k', jobId: 'b', now: NOW + 1 });
      await d.close({ scope: s, key: 'k', jobId: 'a' }); // replaced: not the run
      expect(await d.state({ scope: s, key: 'k' })).toEqual({ run: 'b', first: NOW });
      await d.close({ scope: s, key: 'k', jobId: 'b' });
      // no window open; the one that closed is remembered with its run
      expect(await d.state({ scope: s, key: 'k' })).toEqual({ lastRun: 'b', lastFirst: NOW });
      // a new window, and the count goes on over windows
      expect(await d.open({ scope: s, key: 'k', jobId: 'c', now: NOW + 50 })).toEqual({ first: NOW + 50, seq: 3 });
      expect(await d.state({ scope: s, key: 'k' })).toEqual({
        run: 'c',
        first: NOW + 50,
        lastRun: 'b',
        lastFirst: NOW,
      });
    });

    it('hands the open window to another job only from the run it names', async () => {
      const d = await setup();
      const s = scope();
      await d.open({ scope: s, key: 'k', jobId: 'a', now: NOW });
      expect(await d.adopt({ scope: s, key: 'k', from: 'x', to: 'b' })).toBe(false);
      expect(await d.state({ scope: s, key: 'k' })).toEqual({ run: 'a', first: NOW });
      expect(await d.adopt({ scope: s, key: 'k', from: 'a', to: 'b' })).toBe(true);
      expect(await d.state({ scope: s, key: 'k' })).toEqual({ run: 'b', first: NOW });
      // the run that took it over closes it
      await d.close({ scope: s, key: 'k', jobId: 'b' });
      expect(await d.state({ scope: s, key: 'k' })).toEqual({ lastRun: 'b', lastFirst: NOW });
      // no window open: nothing to hand over
      expect(await d.adopt({ scope: s, key: 'k', from: 'b', to: 'c' })).toBe(false);
      expect(await d.adopt({ scope: s, key: 'never', from: 'b', to: 'c' })).toBe(false);
      expect(await d.state({ scope: s, key: 'never' })).toEqual({});
    });
  });
}
