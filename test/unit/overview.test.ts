import { describe, expect, it } from 'vitest';
import type { IndexEntry, IndexPage, JobSummary } from '../../shared/core/control-ports';
import { overviewWindow, summarizeType } from '../../shared/core/overview';
import { JOB_STATES, type JobState } from '../../shared/core/states';
import { keys } from '../../shared/core/table';

const NOW = Date.parse('2026-06-01T12:34:56.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

function entry(id: string, createdMs: number, state: JobState, extra: Partial<JobSummary> = {}): IndexEntry {
  const createdAt = iso(createdMs);
  return {
    sortKey: keys.created(createdAt, id),
    summary: { id, type: 'echo', state, createdAt, runAt: createdAt, attempts: 0, finishedAt: null, ...extra },
  };
}
const page = (entries: IndexEntry[], more = false): IndexPage => ({
  entries: [...entries].sort((a, b) => (a.sortKey < b.sortKey ? 1 : -1)),
  more,
});
const zero = Object.fromEntries(JOB_STATES.map((s) => [s, 0]));

describe('overviewWindow', () => {
  it('picks the smallest bucket that keeps the series within 60 buckets, aligned to the epoch', () => {
    expect(overviewWindow(NOW, 60)).toEqual({
      windowStart: Date.parse('2026-06-01T11:34:00.000Z'),
      bucketMs: 60_000,
      buckets: 61,
    });
    expect(overviewWindow(NOW, 5)).toEqual({
      windowStart: Date.parse('2026-06-01T12:29:00.000Z'),
      bucketMs: 60_000,
      buckets: 6,
    });
    expect(overviewWindow(NOW, 90).bucketMs).toBe(120_000);
    const day = overviewWindow(NOW, 1440);
    expect(day).toEqual({ windowStart: Date.parse('2026-05-31T12:30:00.000Z'), bucketMs: 1_800_000, buckets: 49 });
  });
});

describe('summarizeType', () => {
  const window = overviewWindow(NOW, 5); // buckets 12:29 .. 12:34

  it('counts every job read by state, buckets created by createdAt and succeeded/failed by finishedAt', () => {
    const t = (hhmmss: string) => Date.parse(`2026-06-01T${hhmmss}.000Z`);
    const out = summarizeType({
      type: 'echo',
      window,
      now: NOW,
      dlqDepth: 3,
      pages: [
        page([
          entry('a', t('12:29:10'), 'succeeded', { finishedAt: iso(t('12:31:00')) }),
          entry('b', t('12:30:00'), 'failed', { finishedAt: iso(t('12:34:50')) }),
        ]),
        page([
          entry('c', t('12:33:00'), 'queued', { runAt: iso(t('12:33:30')) }),
          entry('d', t('12:33:01'), 'queued', { runAt: iso(t('12:34:00')) }),
          entry('e', t('12:34:00'), 'queued', { runAt: iso(t('12:40:00')) }), // not due yet
          entry('f', t('12:34:10'), 'running'),
        ]),
      ],
    });
    expect(out).toEqual({
      type: 'echo',
      counts: { ...zero, succeeded: 1, failed: 1, queued: 3, running: 1 },
      countsScope: 'all 6 jobs created since 2026-06-01T12:29:00.000Z (the whole window)',
      dlqDepth: 3,
      oldestQueuedAgeMs: NOW - t('12:33:30'),
      series: [
        { start: '2026-06-01T12:29:00.000Z', created: 1, succeeded: 0, failed: 0 },
        { start: '2026-06-01T12:30:00.000Z', created: 1, succeeded: 0, failed: 0 },
        { start: '2026-06-01T12:31:00.000Z', created: 0, succeeded: 1, failed: 0 },
        { start: '2026-06-01T12:32:00.000Z', created: 0, succeeded: 0, failed: 0 },
        { start: '2026-06-01T12:33:00.000Z', created: 2, succeeded: 0, failed: 0 },
        { start: '2026-06-01T12:34:00.000Z', created: 2, succeeded: 0, failed: 1 },
      ],
    });
  });

  it('when a shard held more, counts only what every shard covers, and says it was truncated', () => {
    const t = (hhmmss: string) => Date.parse(`2026-06-01T${hhmmss}.000Z`);
    const out = summarizeType({
      type: 'echo',
      window,
      now: NOW,
      dlqDepth: null,
      pages: [
        // truncated: its last entry read is 12:32:00, so older entries of other shards are not comparable
        page([entry('a1', t('12:34:00'), 'queued'), entry('a2', t('12:32:00'), 'queued')], true),
        page([entry('b1', t('12:33:00'), 'succeeded'), entry('b2', t('12:30:00'), 'queued')]),
      ],
    });
    expect(out.counts).toEqual({ ...zero, queued: 2, succeeded: 1 });
    expect(out.countsScope).toBe(
      'the 3 newest jobs, created since 2026-06-01T12:32:00.000Z (truncated: the window holds more jobs than an overview reads)',
    );
    expect(out.series.reduce((n, b) => n + b.created, 0)).toBe(3);
    expect(out.oldestQueuedAgeMs).toBe(NOW - t('12:32:00'));
  });

  it('has null oldestQueuedAgeMs and zero counts for no jobs', () => {
    const out = summarizeType({ type: 'echo', window, now: NOW, dlqDepth: 0, pages: [page([])] });
    expect(out.counts).toEqual(zero);
    expect(out.oldestQueuedAgeMs).toBeNull();
    expect(out.series).toHaveLength(6);
  });
});
