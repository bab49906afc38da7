import { describe, expect, it } from 'vitest';
import { enqueueRequestSchema } from '../../shared/core/enqueue';
import { classifyRefusedClaim } from '../../shared/core/lease';
import {
  checkDispatchBy,
  EARLY_START_TOLERANCE_MS,
  earlyByMs,
  isPastDispatchBy,
  MAX_DISPATCH_WINDOW_MS,
  SCHEDULE_LEAD_MS,
  scheduleFireAt,
} from '../../shared/core/scheduling';
import { ValidationError } from '../../shared/errors';
import { newJob } from '../support/fakes';

const NOW = Date.parse('2026-03-01T12:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

function issues(fn: () => unknown): { path: string; message: string }[] {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).issues ?? [];
  }
  throw new Error('expected a ValidationError');
}

describe('delayed jobs fire early and wait out the rest', () => {
  it('a far-future job schedule fires one minute before runAt', () => {
    expect(SCHEDULE_LEAD_MS).toBe(60_000);
    expect(scheduleFireAt(NOW + 2 * 3600_000)).toBe(NOW + 2 * 3600_000 - 60_000);
  });

  it('a scheduled job more than a second early is not started yet', () => {
    const job = newJob({ id: 'j', type: 'echo', state: 'scheduled', runAt: iso(NOW + 60_000) });
    expect(earlyByMs(job, NOW)).toBe(60_000);
    expect(earlyByMs(job, NOW + 60_000 - EARLY_START_TOLERANCE_MS - 1)).toBe(EARLY_START_TOLERANCE_MS + 1);
    expect(earlyByMs(job, NOW + 60_000 - EARLY_START_TOLERANCE_MS)).toBe(0);
    expect(earlyByMs(job, NOW + 90_000)).toBe(0);
  });

  it('every waiting state waits for its runAt (a message may arrive early); a running job does not', () => {
    for (const state of ['scheduled', 'queued', 'retrying'] as const) {
      expect(earlyByMs(newJob({ id: 'j', type: 'echo', state, runAt: iso(NOW + 60_000) }), NOW)).toBe(60_000);
    }
    expect(earlyByMs(newJob({ id: 'j', type: 'echo', state: 'running', runAt: iso(NOW + 60_000) }), NOW)).toBe(0);
  });

  it('a refused claim of an early scheduled job says early, not missing', () => {
    const job = newJob({ id: 'j', type: 'echo', state: 'scheduled', runAt: iso(NOW + 30_000) });
    expect(classifyRefusedClaim(job, NOW, 'echo')).toEqual({ kind: 'early', job });
  });
});

describe('dispatchBy', () => {
  it('is accepted by the enqueue schema as an ISO date-time with offset', () => {
    const body = { type: 'echo', payload: {}, dispatchBy: '2026-03-01T13:00:00+01:00' };
    expect(enqueueRequestSchema.parse(body)).toEqual(body);
    const bad = enqueueRequestSchema.safeParse({ ...body, dispatchBy: 'tomorrow' });
    expect(bad.error?.issues.map((i) => i.path.join('.'))).toEqual(['dispatchBy']);
  });

  it('is normalised to UTC ISO text (so stored deadlines compare as text)', () => {
    expect(checkDispatchBy('2026-03-01T14:00:00+01:00', NOW, NOW)).toBe('2026-03-01T13:00:00.000Z');
  });

  it('must be after runAt and after now, on path dispatchBy', () => {
    expect(issues(() => checkDispatchBy(iso(NOW), NOW, NOW))[0]?.path).toBe('dispatchBy');
    expect(issues(() => checkDispatchBy(iso(NOW + 1000), NOW + 5000, NOW))[0]?.path).toBe('dispatchBy');
    expect(checkDispatchBy(iso(NOW + 1), NOW, NOW)).toBe(iso(NOW + 1));
  });

  it('may be at most 366 days after runAt', () => {
    expect(checkDispatchBy(iso(NOW + MAX_DISPATCH_WINDOW_MS), NOW, NOW)).toBe(iso(NOW + MAX_DISPATCH_WINDOW_MS));
    expect(issues(() => checkDispatchBy(iso(NOW + MAX_DISPATCH_WINDOW_MS + 1), NOW, NOW))).toEqual([
      { path: 'dispatchBy', message: 'must be at most 366 days after runAt' },
    ]);
  });

  it('expires a never-started scheduled or queued job once passed, and nothing else', () => {
    const deadline = iso(NOW);
    const queued = newJob({ id: 'j', type: 'echo', dispatchBy: deadline });
    expect(isPastDispatchBy(queued, NOW)).toBe(false); // at the deadline it may still start
    expect(isPastDispatchBy(queued, NOW + 1)).toBe(true);
    expect(isPastDispatchBy({ ...queued, state: 'scheduled' }, NOW + 1)).toBe(true);
    expect(isPastDispatchBy({ ...queued, attempts: 1, state: 'retrying' }, NOW + 1)).toBe(false); // started once
    expect(isPastDispatchBy({ ...queued, state: 'running', attempts: 1 }, NOW + 1)).toBe(false);
    expect(isPastDispatchBy({ ...queued, state: 'succeeded' }, NOW + 1)).toBe(false);
    expect(isPastDispatchBy(newJob({ id: 'k', type: 'echo' }), NOW + 1)).toBe(false); // no deadline
    // started once and waited (`resumes`), its attempt given back: past dispatch, as the claim rule says
    expect(isPastDispatchBy({ ...queued, resumes: 1 }, NOW + 1)).toBe(false);
    expect(isPastDispatchBy({ ...queued, state: 'scheduled', resumes: 1 }, NOW + 1)).toBe(false);
  });

  it('makes a refused claim say past-deadline, before anything else but a finished job', () => {
    const job = newJob({ id: 'j', type: 'echo', dispatchBy: iso(NOW - 1) });
    expect(classifyRefusedClaim(job, NOW, 'echo')).toEqual({ kind: 'past-deadline', job });
    const done = { ...job, state: 'expired' as const };
    expect(classifyRefusedClaim(done, NOW, 'echo')).toEqual({ kind: 'finished', job: done });
  });
});
