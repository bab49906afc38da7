/**
 * Test-only helpers beside the in-memory ports: captured logs, jobs and configuration as the API
 * writes them, SQS records, in-memory metrics.
 *
 * The port fakes themselves (`FakeJobStore`, `FakeJobQueue`, `FakeJobScheduler`) live in
 * test/local-aws/memory-fakes.ts, where the testing kit's in-memory mode ships them; they are
 * re-exported here so that tests keep one import.
 */
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import type { PlatformConfig } from '../../shared/config';
import type { Job } from '../../shared/core/job';
import type { MetricName, Metrics } from '../../shared/core/metrics';
import type { LogSink } from '../../shared/logger';

export { type DueAttributes, FakeJobQueue, FakeJobScheduler, FakeJobStore } from '../local-aws/memory-fakes';

const iso = (ms: number) => new Date(ms).toISOString();

/** A log sink that keeps every line, parsed. */
export function captureLogs(): { sink: LogSink; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  return { sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>), lines };
}

/** A job as the API writes it: queued, no attempt yet. Override any field. */
export function newJob(
  overrides: Partial<Job> & Pick<Job, 'id' | 'type'>,
  now = Date.parse('2026-01-01T00:00:00Z'),
): Job {
  return {
    state: 'queued',
    payload: {},
    payloadHash: `hash-${overrides.id}`,
    attempts: 0,
    maxAttempts: 3,
    createdAt: iso(now),
    updatedAt: iso(now),
    runAt: iso(now),
    leaseToken: 0,
    errors: [],
    ...overrides,
  };
}

/** Platform configuration with a route for each given type. */
export function testConfig(types: readonly string[], overrides: Partial<PlatformConfig> = {}): PlatformConfig {
  const routes = Object.fromEntries(
    types.map((type) => [
      type,
      {
        queueUrl: `https://sqs.eu-west-1.amazonaws.com/123456789012/orrery-${type}`,
        queueArn: `arn:aws:sqs:eu-west-1:123456789012:orrery-${type}`,
      },
    ]),
  );
  return {
    tableName: 'orrery-jobs',
    routes,
    scheduleGroup: 'orrery',
    schedulerRoleArn: 'arn:aws:iam::123456789012:role/orrery-scheduler',
    retentionDays: 30,
    logLevel: 'silent',
    ...overrides,
  };
}

/** An SQS record as Lambda's event source mapping delivers it. `body` objects are JSON-encoded. */
export function sqsRecord(
  body: string | object,
  options: { messageId?: string; receiveCount?: number; receiptHandle?: string } = {},
): SQSRecord {
  const messageId = options.messageId ?? 'msg-1';
  return {
    messageId,
    receiptHandle: options.receiptHandle ?? `rh-${messageId}`,
    body: typeof body === 'string' ? body : JSON.stringify(body),
    attributes: {
      ApproximateReceiveCount: String(options.receiveCount ?? 1),
      SentTimestamp: '1767225600000',
      SenderId: 'AIDAEXAMPLE',
      ApproximateFirstReceiveTimestamp: '1767225600000',
    },
    messageAttributes: {},
    md5OfBody: 'd41d8cd98f00b204e9800998ecf8427e',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:eu-west-1:123456789012:orrery-test',
    awsRegion: 'eu-west-1',
  };
}

export function sqsEvent(...records: SQSRecord[]): SQSEvent {
  return { Records: records };
}

/** {@link Metrics} kept in memory, in the order recorded. */
export class MemoryMetrics implements Metrics {
  readonly recorded: { name: MetricName; type: string; value: number }[] = [];

  add(name: MetricName, type: string, value = 1): void {
    this.recorded.push({ name, type, value });
  }

  /** The values recorded for `name` (of `type`, when given). */
  values(name: MetricName, type?: string): number[] {
    return this.recorded.filter((m) => m.name === name && (type === undefined || m.type === type)).map((m) => m.value);
  }

  /** The sum of {@link values}. */
  sum(name: MetricName, type?: string): number {
    return this.values(name, type).reduce((a, b) => a + b, 0);
  }
}
