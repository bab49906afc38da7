/**
 * Invariant 20 of the system chaos run (test/chaos/system-events.ts) on made-up histories, and the
 * plan's events: an event accepted with 2xx makes exactly one job per subscriber.
 */
import { describe, expect, it } from 'vitest';
import { eventJobId } from '../../shared/core/events';
import { checkEvents, EVENT_TYPE, type EventsInput, planEvents, SYSTEM_EVENT } from '../chaos/system-events';
import type { PlannedJob } from '../chaos/system-plan';

const job = (id: string, overrides: Partial<PlannedJob> = {}): PlannedJob => ({
  id,
  type: 'sys-a',
  via: 'single',
  timing: 'now',
  behaviour: 'succeed',
  backoffKind: 'short',
  backoff: { kind: 'constant', delayMs: 900 },
  payload: { sleepMs: 10 },
  maxAttempts: 5,
  duplicates: [1_000],
  ...overrides,
});

const a = eventJobId(SYSTEM_EVENT.name, 'e1', 'sys-a');
const b = eventJobId(SYSTEM_EVENT.name, 'e1', EVENT_TYPE);

function input(overrides: Partial<EventsInput> = {}): EventsInput {
  return {
    planned: [{ name: SYSTEM_EVENT.name, id: 'e1', jobs: [a, b] }],
    answers: new Map([['e1', [[b, a]]]]),
    listed: new Map([['e1', [a, b]]]),
    stored: new Set([a, b]),
    ...overrides,
  };
}

describe('invariant 20: each event accepted with 2xx makes exactly one job per subscriber', () => {
  it('holds when every answer, the final listing and the store have one job per subscriber', () => {
    expect(checkEvents(input())).toEqual({ checked: 1, violations: [] });
    // answered twice (a retried send after a lost answer), the same jobs both times
    expect(
      checkEvents(
        input({
          answers: new Map([
            [
              'e1',
              [
                [a, b],
                [a, b],
              ],
            ],
          ]),
        }),
      ).violations,
    ).toEqual([]);
  });

  it('checks nothing of an event never accepted (it may have made its jobs, or not)', () => {
    expect(checkEvents(input({ answers: new Map(), listed: new Map(), stored: new Set() }))).toEqual({
      checked: 0,
      violations: [],
    });
  });

  it('is violated by an answer that names a job too few, or one too many', () => {
    const short = checkEvents(input({ answers: new Map([['e1', [[a]]]]) }));
    expect(short.violations.map((v) => v.detail)).toEqual([expect.stringContaining('was answered with jobs')]);
    const extra = checkEvents(input({ answers: new Map([['e1', [[a, b, 'sys-00001-x']]]]) }));
    expect(extra.violations).toHaveLength(1);
  });

  it('is violated when GET /events lists other jobs at the end, or cannot be read', () => {
    const twice = checkEvents(input({ listed: new Map([['e1', [a, b, b]]]) }));
    expect(twice.violations.map((v) => v.detail)).toEqual([expect.stringContaining('GET /events/e1 at the end lists')]);
    const failed = checkEvents(input({ listed: new Map([['e1', { error: 'http-503' }]]) }));
    expect(failed.violations.map((v) => v.detail)).toEqual([expect.stringContaining('failed: http-503')]);
  });

  it("is violated when an accepted event's job is not stored", () => {
    const out = checkEvents(input({ stored: new Set([a]) }));
    expect(out.violations).toEqual([{ subject: a, detail: expect.stringContaining(`its jobs ${b} are not stored`) }]);
  });
});

describe('the plan of events', () => {
  it('turns eligible jobs of the first type into events, each with a sibling of the second subscriber', () => {
    const jobs = Array.from({ length: 200 }, (_, i) => job(`sys-${String(i).padStart(5, '0')}-x`));
    const events = planEvents(jobs, { types: ['sys-a', EVENT_TYPE], share: 0.3, maxAttempts: 3, backoffDelayMs: 300 });
    // about 30 % of 200, chosen from the ids
    expect(events.length).toBeGreaterThan(30);
    expect(events.length).toBeLessThan(90);
    expect(jobs).toHaveLength(200 + events.length);
    for (const event of events) {
      const made = event.jobs.map((id) => jobs.find((j) => j.id === id));
      expect(made.map((j) => [j?.type, j?.via, j?.event])).toEqual([
        ['sys-a', 'event', { name: SYSTEM_EVENT.name, id: event.id }],
        [EVENT_TYPE, 'event', { name: SYSTEM_EVENT.name, id: event.id }],
      ]);
      // the ids are the API's derived ones, and the retry policy the types' (an event names none)
      expect(event.jobs).toEqual([
        eventJobId(SYSTEM_EVENT.name, event.id, 'sys-a'),
        eventJobId(SYSTEM_EVENT.name, event.id, EVENT_TYPE),
      ]);
      expect(made.map((j) => [j?.maxAttempts, j?.backoff])).toEqual([
        [3, { kind: 'constant', delayMs: 300 }],
        [3, { kind: 'constant', delayMs: 300 }],
      ]);
      // the sibling's message is not copied (the first's planned duplicates stay its own)
      expect(made[1]?.duplicates).toEqual([]);
    }
  });

  it('leaves alone jobs a cancel, a line, a flow, a delay or another behaviour shapes', () => {
    const shaped = [
      job('c', { control: { cancelAfterMs: 10 } }),
      job('t', { together: 'burst-1' }),
      job('f', { flow: 'flow-1' }),
      job('d', { timing: 'sqs-short', delaySeconds: 5 }),
      job('y', { behaviour: 'flaky' }),
      job('b', { type: 'sys-b' }),
      job('k', { payload: { tag: 'key-0' } }),
    ];
    const many = Array.from({ length: 20 }, () => shaped.map((j) => ({ ...j, id: `${j.id}-${Math.random()}` }))).flat();
    expect(planEvents(many, { types: ['sys-a', EVENT_TYPE], share: 1, maxAttempts: 3, backoffDelayMs: 300 })).toEqual(
      [],
    );
  });
});
