/**
 * The contract of {@link JobIndex} (listing reads), run against the in-memory fake
 * (test/unit/contract-fakes.test.ts) and the DynamoDB adapter on DynamoDB Local
 * (test/integration/contract-adapters.test.ts): the same jobs, written through each leg's job
 * store, must come back the same, payloads included when asked.
 */
import { describe, expect, it } from 'vitest';
import type { IndexPartition, JobIndex } from '../../shared/core/control-ports';
import type { Job } from '../../shared/core/job';
import type { JobStore } from '../../shared/core/ports';
import { keys, SHARD_COUNT } from '../../shared/core/table';
import { newJob } from '../support/fakes';

/** One implementation: a job store and the index over its jobs. */
export interface IndexLeg {
  store: JobStore;
  index: JobIndex;
}

const T0 = Date.parse('2026-06-01T00:00:00.000Z');

export function jobIndexContract(fresh: () => Promise<IndexLeg>): void {
  const run = Math.random().toString(36).slice(2, 8);
  let seq = 0;
  const type = () => {
    seq += 1;
    return `ix-${run}-${seq}`;
  };

  /** Every entry of every shard of `type` (newest first per shard), read with `withPayload`. */
  async function readAll(index: JobIndex, of: string, withPayload: boolean, atLeast?: string) {
    const out = [];
    for (let shard = 0; shard < SHARD_COUNT; shard++) {
      const partition: IndexPartition = { index: 'byType', key: keys.byTypeShard(of, shard) };
      const page = await index.query({
        partition,
        limit: 100,
        ...(withPayload ? { withPayload } : {}),
        ...(atLeast ? { atLeast } : {}),
      });
      expect(page.more).toBe(false);
      out.push(...page.entries);
    }
    return out.sort((a, b) => (a.sortKey < b.sortKey ? 1 : -1));
  }

  describe('job index', () => {
    it('returns each entry with its summary, and its payload only when asked, inline or in its own item', async () => {
      const leg = await fresh();
      const t = type();
      const big = { note: 'x'.repeat(3000), tenant: 'acme' };
      const jobs: Job[] = [
        newJob({ id: `${t}-a`, type: t, payload: { tenant: 'acme', n: 1 }, payloadHash: `h-${t}-a` }, T0 + 1),
        newJob({ id: `${t}-b`, type: t, payload: big, payloadHash: `h-${t}-b` }, T0 + 2),
        newJob({ id: `${t}-c`, type: t, payload: {}, payloadHash: `h-${t}-c` }, T0 + 3),
      ];
      for (const job of jobs) expect((await leg.store.create(job)).created).toBe(true);

      const plain = await readAll(leg.index, t, false);
      expect(plain.map((e) => e.summary.id)).toEqual([`${t}-c`, `${t}-b`, `${t}-a`]);
      expect(plain.every((e) => !('payload' in e))).toBe(true);
      expect(plain[2]).toEqual({
        sortKey: keys.created(new Date(T0 + 1).toISOString(), `${t}-a`),
        summary: {
          id: `${t}-a`,
          type: t,
          state: 'queued',
          createdAt: new Date(T0 + 1).toISOString(),
          runAt: new Date(T0 + 1).toISOString(),
          attempts: 0,
          finishedAt: null,
        },
      });

      const withPayload = await readAll(leg.index, t, true);
      expect(withPayload.map((e) => [e.summary.id, e.payload])).toEqual([
        [`${t}-c`, {}],
        [`${t}-b`, big],
        [`${t}-a`, { tenant: 'acme', n: 1 }],
      ]);
    });

    it('honours atLeast (inclusive) with payloads', async () => {
      const leg = await fresh();
      const t = type();
      for (let i = 1; i <= 4; i++) {
        await leg.store.create(
          newJob({ id: `${t}-${i}`, type: t, payload: { i }, payloadHash: `h-${t}-${i}` }, T0 + i * 1000),
        );
      }
      const from = new Date(T0 + 2000).toISOString();
      const entries = await readAll(leg.index, t, true, from);
      expect(entries.map((e) => [e.summary.id, e.payload])).toEqual([
        [`${t}-4`, { i: 4 }],
        [`${t}-3`, { i: 3 }],
        [`${t}-2`, { i: 2 }],
      ]);
    });
  });
}
