import { afterEach, describe, expect, it, vi } from 'vitest';
import { PowertoolsMetrics } from '../../shared/aws/powertools-metrics';
import { METRIC } from '../../shared/core/metrics';

interface EmfLine {
  _aws: {
    Timestamp: number;
    CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[];
  };
  [key: string]: unknown;
}

/** Runs `fn` and returns the lines it wrote to stdout and stderr. */
function output(fn: () => void): { stdout: EmfLine[]; stderr: string[] } {
  const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    fn();
    return {
      stdout: out.mock.calls.map(([chunk]) => JSON.parse(String(chunk)) as EmfLine),
      stderr: err.mock.calls.map(([chunk]) => String(chunk)),
    };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

describe('PowertoolsMetrics (the Metrics port as EMF lines)', () => {
  afterEach(() => vi.restoreAllMocks());

  it('writes one EMF line per job type on flush: namespace, the type as the only dimension, units', () => {
    const metrics = new PowertoolsMetrics();
    metrics.add(METRIC.started, 'echo');
    metrics.add(METRIC.queueDelay, 'echo', 120);
    metrics.add(METRIC.queueDelay, 'echo', 80);
    metrics.add(METRIC.enqueued, 'send-email', 3);
    const { stdout, stderr } = output(() => metrics.flush());
    expect(stderr).toEqual([]);
    expect(stdout).toHaveLength(2);
    const [echo, email] = stdout;
    expect(echo?._aws.CloudWatchMetrics).toEqual([
      {
        Namespace: 'Orrery',
        Dimensions: [['type']],
        Metrics: [
          { Name: 'JobsStarted', Unit: 'Count' },
          { Name: 'QueueDelay', Unit: 'Milliseconds' },
        ],
      },
    ]);
    expect(echo).toMatchObject({ type: 'echo', JobsStarted: 1, QueueDelay: [120, 80] });
    expect(echo).not.toHaveProperty('service');
    expect(email).toMatchObject({ type: 'send-email', JobsEnqueued: 3 });
  });

  it('writes nothing when nothing was recorded since the last flush (and no warning)', () => {
    const metrics = new PowertoolsMetrics('Orrery/test');
    metrics.add(METRIC.succeeded, 'echo');
    expect(output(() => metrics.flush()).stdout).toHaveLength(1);
    expect(output(() => metrics.flush())).toEqual({ stdout: [], stderr: [] });
  });

  it('keeps the type on every line when Powertools splits a metric past 100 values', () => {
    const metrics = new PowertoolsMetrics('Orrery/test');
    for (let i = 0; i < 150; i++) metrics.add(METRIC.runDuration, 'echo', i);
    const { stdout } = output(() => metrics.flush());
    expect(stdout.length).toBeGreaterThan(1);
    for (const line of stdout) {
      expect(line._aws.CloudWatchMetrics[0]?.Dimensions).toEqual([['type']]);
      expect(line._aws.CloudWatchMetrics[0]?.Namespace).toBe('Orrery/test');
      expect(line.type).toBe('echo');
    }
    const values = stdout.flatMap((line) => [line.RunDuration].flat());
    expect(values).toEqual(Array.from({ length: 150 }, (_, i) => i));
  });

  it('drops a value that is not finite and records a negative one as 0', () => {
    const metrics = new PowertoolsMetrics();
    metrics.add(METRIC.queueDelay, 'echo', Number.NaN);
    metrics.add(METRIC.queueDelay, 'echo', -5);
    const { stdout } = output(() => metrics.flush());
    expect(stdout[0]?.QueueDelay).toBe(0);
  });
});
