/**
 * Shared fixture of the Scheduler stand-in tests: a stand-in on a ManualClock whose `deliver`
 * records fires (and can be told to fail), plus a real SchedulerClient pointed at it.
 */
import { type CreateScheduleCommandInput, SchedulerClient } from '@aws-sdk/client-scheduler';
import { afterEach, beforeEach } from 'vitest';
import { ManualClock } from '../../shared/core/clock';
import { LOCAL_CREDENTIALS } from '../local-aws/clients';
import {
  type ScheduledFire,
  type SchedulerStandIn,
  type SchedulerStandInOptions,
  startSchedulerStandIn,
} from '../local-aws/scheduler-standin';

export const T0 = Date.parse('2026-01-01T10:00:00Z');
export const MIN = 60_000;
export const QUEUE_ARN = 'arn:aws:sqs:us-east-1:000000000000:orrery-ready';
export const ROLE_ARN = 'arn:aws:iam::000000000000:role/orrery-scheduler';
export const PLACEHOLDER_INPUT =
  '{"arn":"<aws.scheduler.schedule-arn>","at":"<aws.scheduler.scheduled-time>","exec":"<aws.scheduler.execution-id>","n":"<aws.scheduler.attempt-number>"}';

export type AwsError = Error & { $metadata?: { httpStatusCode?: number } };

/** The error a call rejects with (fails the test if it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<AwsError> {
  try {
    await promise;
  } catch (err) {
    return err as AwsError;
  }
  throw new Error('expected the call to fail');
}

/** A valid CreateSchedule/UpdateSchedule input (`job-1`, rate(5 minutes), SQS target) with overrides. */
export function input(overrides: Partial<CreateScheduleCommandInput> = {}): CreateScheduleCommandInput {
  return {
    Name: 'job-1',
    ScheduleExpression: 'rate(5 minutes)',
    FlexibleTimeWindow: { Mode: 'OFF' },
    Target: { Arn: QUEUE_ARN, RoleArn: ROLE_ARN, Input: PLACEHOLDER_INPUT },
    ...overrides,
  };
}

/** The delivered Input, parsed (for {@link PLACEHOLDER_INPUT}: arn, at, exec, n). */
export function inputOf(fire: ScheduledFire | undefined): Record<string, string> {
  return JSON.parse(fire?.target.Input ?? 'null') as Record<string, string>;
}

/** State of one test, reset before each. */
export interface StandInHarness {
  clock: ManualClock;
  fired: ScheduledFire[];
  logs: string[];
  /** How many upcoming deliveries throw. */
  failNext: number;
  standIn: SchedulerStandIn;
  client: SchedulerClient;
  /** Starts the stand-in (autoFire off, recording deliver, logs captured) and the client. */
  start(overrides?: Partial<SchedulerStandInOptions>): Promise<void>;
  /** Stops the client and stand-in (also done after each test). */
  stop(): Promise<void>;
}

/** Registers beforeEach/afterEach hooks and returns the harness they maintain. */
export function useStandIn(): StandInHarness {
  let standIn: SchedulerStandIn | undefined;
  let client: SchedulerClient | undefined;
  const h: StandInHarness = {
    clock: new ManualClock(T0),
    fired: [],
    logs: [],
    failNext: 0,
    get standIn(): SchedulerStandIn {
      if (!standIn) throw new Error('call start() first');
      return standIn;
    },
    get client(): SchedulerClient {
      if (!client) throw new Error('call start() first');
      return client;
    },
    async start(overrides = {}) {
      standIn = await startSchedulerStandIn({
        clock: h.clock,
        autoFire: false,
        log: (line) => h.logs.push(line),
        deliver: async (fire) => {
          if (h.failNext > 0) {
            h.failNext--;
            throw new Error('target unavailable');
          }
          h.fired.push(fire);
        },
        ...overrides,
      });
      client = new SchedulerClient({ region: 'us-east-1', endpoint: standIn.endpoint, credentials: LOCAL_CREDENTIALS });
    },
    async stop() {
      client?.destroy();
      await standIn?.stop();
      client = undefined;
      standIn = undefined;
    },
  };
  beforeEach(() => {
    h.clock = new ManualClock(T0);
    h.fired = [];
    h.logs = [];
    h.failNext = 0;
  });
  afterEach(() => h.stop());
  return h;
}
