/**
 * Start-time precision of far-future jobs on local AWS, with the real one-minute lead: the
 * Scheduler stand-in fires each job's `at(runAt − 60 s)` schedule on its own (polling every
 * second, on a clock that runs in real time after one jump), the worker receives the message a
 * minute early, hides it for the remaining seconds, and starts the job when it comes back.
 * Takes about 75 s of real time; prints the measured error of every job.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SCHEDULE_LEAD_MS } from '../../shared/core/scheduling';
import { type SchedulingFixture, startSchedulingFixture } from './scheduling-fixture';

let f: SchedulingFixture;

afterEach(async () => {
  await f?.stop();
});

describe('far-future job start-time precision (real 60 s lead, real SQS visibility)', () => {
  it('starts each job at its runAt (never before, well within a second after)', async () => {
    f = await startSchedulingFixture({ label: 'precision', schedulerPolls: true });
    const base = Math.ceil((f.clock.now() + 2 * 3600_000) / 1000) * 1000;
    // Six jobs ~1.7 s apart with different sub-second offsets (SQS visibility is whole seconds).
    const runAts = Array.from({ length: 6 }, (_, i) => base + i * 1_700 + ((i * 337) % 1000));
    const ids: string[] = [];
    for (const runAt of runAts) {
      const { status, body } = await f.request('POST', '/jobs', {
        type: 'echo',
        payload: {},
        runAt: new Date(runAt).toISOString(),
      });
      expect(status).toBe(201);
      ids.push(body.id);
    }
    // Jump to two seconds before the first schedule fires; from here on time passes for real.
    f.clock.jumpTo(base - SCHEDULE_LEAD_MS - 2_000);
    const errors: number[] = [];
    for (const [i, id] of ids.entries()) {
      const job = await f.waitFor(id, ['succeeded', 'failed'], 90_000);
      expect(job.attempts).toBe(1);
      const handlerStart = f.executions.find((e) => e.id === id)?.at ?? Number.NaN;
      errors.push(handlerStart - (runAts[i] ?? 0));
    }
    const sorted = [...errors].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
    console.log(
      `[scheduling] start-time error of ${errors.length} far-future jobs (handler start - runAt, ms): ` +
        `${errors.join(', ')}; min ${sorted[0]}, median ${median}, max ${sorted.at(-1)}`,
    );
    for (const error of errors) {
      expect(error).toBeGreaterThanOrEqual(0); // never before runAt
      expect(error).toBeLessThan(1_500);
    }
    expect(f.executions).toHaveLength(ids.length);
  }, 150_000);
});
