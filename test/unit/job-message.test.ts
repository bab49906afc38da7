import { describe, expect, it } from 'vitest';
import { jobMessage } from '../../shared/core/job';

describe('jobMessage: the one message that brings a job to its worker', () => {
  it('carries the id and the type, and nothing else by default', () => {
    expect(jobMessage({ id: 'j1', type: 'echo' })).toEqual({ v: 1, id: 'j1', type: 'echo' });
  });

  it("carries the run a queue-one schedule's run waits for, and the runAt of a message sent ahead", () => {
    const runAt = Date.parse('2026-03-01T12:00:00.000Z');
    expect(jobMessage({ id: 'j2', type: 'echo', after: 'nightly.20260301T1100Z' }, { notBefore: runAt })).toEqual({
      v: 1,
      id: 'j2',
      type: 'echo',
      after: 'nightly.20260301T1100Z',
      notBefore: '2026-03-01T12:00:00.000Z',
    });
  });

  it('leaves out an after that is undefined (a job item read back without one)', () => {
    expect(Object.keys(jobMessage({ id: 'j3', type: 'echo', after: undefined }))).toEqual(['v', 'id', 'type']);
  });
});
