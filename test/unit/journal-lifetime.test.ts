/**
 * A step runs once for its job "whatever happens later": its recorded entry must still be there
 * when a later run of the same job replays it. Entries expire 732 days after they are written
 * (JOURNAL_RETENTION_DAYS), but a job's life has no such bound: each sleep may last 366 days, and
 * a handler may sleep more than once.
 */
import { describe, expect, it } from 'vitest';
import type { JournalRecord } from '../../shared/core/journal';
import { echoJob, harness, redelivery } from './worker-harness';

const DAY = 86_400_000;

describe('journal entries outlive the job that recorded them', () => {
  it('a step recorded before three sleeps of 300 days is still there when the job replays it', async () => {
    const charged: number[] = [];
    const h = harness({
      run: async (_payload, ctx) => {
        await ctx.step('charge', () => {
          charged.push(ctx.attempt);
          return 'charged';
        });
        await ctx.sleep('a', '300d');
        await ctx.sleep('b', '300d');
        await ctx.sleep('c', '300d');
        return 'done';
      },
    });
    const expires = new Map<string, number>();
    const record = h.journal.record.bind(h.journal);
    h.journal.record = async (input: JournalRecord) => {
      expires.set(`${input.kind}#${input.name}`, input.expiresAt);
      return record(input);
    };
    h.store.seed(echoJob('long-1'));
    await h.worker(redelivery('long-1'));
    for (let i = 0; i < 3; i++) {
      h.clock.advance(300 * DAY);
      await h.worker(redelivery('long-1'));
    }
    expect(h.store.peek('long-1')?.state).toBe('succeeded');
    expect(charged).toHaveLength(1);
    // the last run (day 900) replayed `charge` from its entry: DynamoDB's TTL may have deleted it by then
    expect((expires.get('step#charge') ?? 0) * 1000).toBeGreaterThan(h.clock.now());
  });
});
