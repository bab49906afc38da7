/**
 * The contract of {@link Pacer} (GCRA per key), run against the in-memory fake
 * (test/unit/contract-fakes.test.ts) and the DynamoDB adapter on DynamoDB Local
 * (test/integration/contract-adapters.test.ts). `fresh` gives a pacer with no memory of earlier
 * calls (another Lambda instance), so the adapter's "try the write it expects first" is crossed.
 */
import { describe, expect, it } from 'vitest';
import { LINE_HAND_ON_GRACE_MS, type LineTurn, type Pacer, rateLimitPace, throttlePace } from '../../shared/core/pace';
import { rankKey } from '../../shared/core/priority';

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

    describe('a throttle’s line (a type with priorities)', () => {
      const pace = throttlePace({ limit: 1, periodSeconds: 1 }); // T = 1 s, no burst
      const job = (rank: number, id: string) => ({ jobId: id, type: 't', rank: rankKey(rank, id) });
      const ask = (p: Pacer, s: string, now: number, j: ReturnType<typeof job>, inLine = false) =>
        p.lineTurn({ scope: s, key: 'k', now, pace, job: j, inLine });

      it('gives a free turn to the best-ranked job waiting, not to the one that asked first', async () => {
        const s = scope();
        const [a, b] = [await fresh(), await fresh()];
        const low1 = job(NOW, 'low1');
        const low2 = job(NOW + 1, 'low2');
        const high = job(NOW - 60_000, 'high'); // a head start of a minute
        // the line is empty and a turn is free: the first goes at once
        expect(await ask(a, s, NOW, low1)).toEqual({ kind: 'go' });
        // no turn free: the next waits in line, about until the next turn
        expect(await ask(b, s, NOW + 10, low2)).toEqual({ kind: 'wait', until: NOW + 1000, joined: true });
        // a better-ranked job comes later: first in line, it is told to come at the next turn
        expect(await ask(a, s, NOW + 20, high)).toEqual({ kind: 'wait', until: NOW + 1000, joined: true });
        expect((await b.line({ scope: s, key: 'k', max: 10 })).map((e) => e.jobId)).toEqual(['high', 'low2']);
        // low2 comes back at its estimate: the turn is free, but high is first. The turn has been
        // free only just (high's message is on its way): low2 waits on, behind it
        const bumped = (await ask(b, s, NOW + 1000, low2, true)) as Extract<LineTurn, { kind: 'wait' }>;
        expect(bumped).toMatchObject({ kind: 'wait', joined: false });
        expect(bumped).not.toHaveProperty('head');
        expect(bumped.until).toBeGreaterThanOrEqual(NOW + 2000);
        // high does not come (its message was lost): once the turn has been free for longer than
        // the grace, a job that finds it first names it, to be sent its message
        const late = NOW + 1000 + LINE_HAND_ON_GRACE_MS + 1;
        expect(await ask(b, s, late, low2, true)).toMatchObject({
          kind: 'wait',
          joined: false,
          head: { jobId: 'high', type: 't', rank: high.rank },
        });
        // high comes: it takes the turn, leaves the line, and names the job first now
        expect(await ask(a, s, late + 5, high, true)).toEqual({ kind: 'go', next: expect.objectContaining(low2) });
        // low2 is first now, but the next turn is a second after the last
        expect(await ask(b, s, late + 500, low2, true)).toEqual({ kind: 'wait', until: late + 1005, joined: false });
        expect(await ask(a, s, late + 1005, low2, true)).toEqual({ kind: 'go' });
        expect(await a.line({ scope: s, key: 'k', max: 10 })).toEqual([]);
        // an empty line and a free turn again: no wait
        expect(await ask(b, s, late + 5000, job(late + 5000, 'later'))).toEqual({ kind: 'go' });
      });

      it('gives each free turn to exactly one job, the first in line, however many instances ask at once', async () => {
        const s = scope();
        const pacers = await Promise.all([fresh(), fresh(), fresh()]);
        const at = (i: number) => pacers[i % 3] as Pacer;
        // a started job holds the first turn, so that every other one has to wait
        expect(await ask(at(0), s, NOW, job(NOW, 'first'))).toEqual({ kind: 'go' });
        const jobs = Array.from({ length: 6 }, (_, i) => job(NOW + ((i * 7) % 6) * 1000 - i * 3, `j${i}`));
        await Promise.all(jobs.map((j, i) => ask(at(i), s, NOW + 1, j)));
        const order = [...jobs].sort((x, y) => x.rank.localeCompare(y.rank)).map((j) => j.jobId);
        const started: string[] = [];
        for (let turn = 1; turn <= 6; turn++) {
          const now = NOW + turn * 1000;
          // every job still waiting asks at once, each from another instance, and the job
          // first in line twice (a duplicate delivery of its message)
          const waiting = jobs.filter((j) => !started.includes(j.jobId));
          const asks = [
            ...waiting.map((j, i) => ({ j, p: at(i + turn) })),
            { j: waiting[0] as (typeof jobs)[0], p: at(turn + 1) },
          ];
          const answers = await Promise.all(asks.map(({ j, p }) => ask(p, s, now, j, true).then((t) => ({ j, t }))));
          const went = answers.filter((a) => a.t.kind === 'go').map((a) => a.j.jobId);
          expect(went).toEqual([order[turn - 1]]);
          started.push(...went);
          // a duplicate that read the line before the turn was taken may have joined again: the
          // worker takes out an entry whose job will not come (here: started), as it finds it first
          for (const e of await at(turn).line({ scope: s, key: 'k', max: 10 })) {
            if (started.includes(e.jobId))
              expect(await at(turn).leaveLine({ scope: s, key: 'k', rank: e.rank })).toBe(true);
          }
        }
        expect(started).toEqual(order);
        expect(await at(1).line({ scope: s, key: 'k', max: 10 })).toEqual([]);
      });

      it('takes out an entry of a job that will not come, and lets a job whose entry is gone join again', async () => {
        const s = scope();
        const p = await fresh();
        expect(await ask(p, s, NOW, job(NOW, 'a'))).toEqual({ kind: 'go' });
        const gone = job(NOW - 10_000, 'gone');
        const b = job(NOW, 'b');
        await ask(p, s, NOW + 1, gone);
        await ask(p, s, NOW + 2, b);
        expect(await p.leaveLine({ scope: s, key: 'k', rank: gone.rank })).toBe(true);
        expect(await p.leaveLine({ scope: s, key: 'k', rank: gone.rank })).toBe(false);
        // b is first now
        expect(
          await (await fresh()).lineTurn({ scope: s, key: 'k', now: NOW + 1000, pace, job: b, inLine: true }),
        ).toEqual({
          kind: 'go',
        });
        // a job that believes it waits, but whose entry is not there, joins when it finds a turn
        // free and another first in line
        const c = job(NOW - 5000, 'c');
        const d = job(NOW, 'd');
        await ask(p, s, NOW + 1001, c);
        // (the turn free since NOW + 2 s has been free for longer than the grace: c is named)
        expect(await ask(p, s, NOW + 2001 + LINE_HAND_ON_GRACE_MS, d, true)).toMatchObject({
          kind: 'wait',
          joined: true,
          head: { jobId: 'c' },
        });
        expect((await p.line({ scope: s, key: 'k', max: 10 })).map((e) => e.jobId)).toEqual(['c', 'd']);
      });

      it('follows a pace set at run time', async () => {
        const s = scope();
        const p = await fresh();
        expect(await ask(p, s, NOW, job(NOW, 'a'))).toEqual({ kind: 'go' });
        // slowed down to 1 per 4 s: the next turn is 4 s after the last
        await (await fresh()).setPace({
          scope: s,
          key: 'k',
          runtime: {
            limit: 1,
            periodSeconds: 4,
            pace: throttlePace({ limit: 1, periodSeconds: 4 }),
            by: 'arn:aws:iam::123456789012:role/ops',
            at: NOW,
          },
          spec: pace,
          now: NOW,
        });
        const b = job(NOW, 'b');
        expect(await ask(p, s, NOW + 1000, b)).toEqual({ kind: 'wait', until: NOW + 4000, joined: true });
        expect(await ask(p, s, NOW + 3999, b, true)).toMatchObject({ kind: 'wait', joined: false });
        expect(await ask(p, s, NOW + 4000, b, true)).toEqual({ kind: 'go' });
      });
    });
  });
}
