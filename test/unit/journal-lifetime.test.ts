/**
 * A step runs once for its job "whatever happens later": its recorded entry must still be there
 * when a later run of the same job replays it. Entries expire 732 days after they are written
 * (JOURNAL_RETENTION_DAYS: a year of waits plus a year of retries and retention), so a job's
 * waits must all end within a year (366 days) of its creation: each sleep may last 366 days, and
 * a handler may sleep more than once.
 */
import { describe, expect, it } from 'vitest';
import type { JournalRecord } from '../../shared/core/journal';
import { echoJob, harness, redelivery } from './worker-harness';

const DAY = 86_400_000;

describe('journal entries outlive the job that recorded them', () => {
  it('a sleep that would end more than 366 days after the job was created fails the job (StepUsageError); every entry it replayed until then was still there', async () => {
    const charged: number[] = [];
    const h = harness({
      run: async (_payload, ctx) => {
        await ctx.step('charge', () => {
          charged.push(ctx.attempt);
          return 'charged';
        });
        await ctx.sleep('a', '300d');
        await ctx.sleep('b', '300d');
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
    h.clock.advance(300 * DAY);
    await h.worker(redelivery('long-1'));
    expect(h.store.peek('long-1')).toMatchObject({
      state: 'failed',
      lastError: { name: 'StepUsageError', message: expect.stringContaining('366 days of its creation') },
    });
    expect(charged).toHaveLength(1);
    expect(expires.has('sleep#b')).toBe(false);
    // the run on day 300 replayed `charge` from its entry, which had a year left
    expect((expires.get('step#charge') ?? 0) * 1000).toBeGreaterThan(h.clock.now() + 365 * DAY);
  });

  it('a signal wait without a timeout waits until the job is 366 days old at most; one with a longer timeout fails the job', async () => {
    const h = harness({
      run: async (_payload, ctx) => {
        await ctx.sleep('a', '300d');
        return ctx.waitForSignal('go');
      },
    });
    h.store.seed(echoJob('long-2'));
    await h.worker(redelivery('long-2'));
    h.clock.advance(300 * DAY);
    await h.worker(redelivery('long-2'));
    const job = h.store.peek('long-2');
    expect(job?.state).toBe('waiting');
    expect(job?.waitingFor).toMatchObject({ kind: 'signal', key: 'go' });
    const until = (job?.waitingFor as { until?: string } | undefined)?.until ?? '';
    expect(Date.parse(until)).toBe(Date.parse(job?.createdAt ?? '') + 366 * DAY);

    const strict = harness({
      run: async (_payload, ctx) => {
        await ctx.sleep('a', '300d');
        return ctx.waitForSignal('go', { timeout: '100d' });
      },
    });
    strict.store.seed(echoJob('long-3'));
    await strict.worker(redelivery('long-3'));
    strict.clock.advance(300 * DAY);
    await strict.worker(redelivery('long-3'));
    expect(strict.store.peek('long-3')).toMatchObject({ state: 'failed', lastError: { name: 'StepUsageError' } });
  });
});
