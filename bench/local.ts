/**
 * The bench's own local AWS: a DynamoDB Local JVM it starts and kills itself, plus fauxqs and
 * the Scheduler stand-in (on a clock the bench can move forward, firing only when asked).
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { Clock } from '../shared/core/clock';
import { type LocalAws, processAlive, startDynamoDbLocal, startLocalAws } from '../test/local-aws/index';

/**
 * Wall-clock time plus an offset that only grows: real time keeps flowing (leases, SQS delays
 * and timers stay consistent), and the bench can jump ahead to when a schedule fires.
 */
export class OffsetClock implements Clock {
  private offset = 0;

  now(): number {
    return Date.now() + this.offset;
  }

  /** Moves the clock to `ms` if that is ahead of now. */
  advanceTo(ms: number): void {
    const now = this.now();
    if (ms > now) this.offset += ms - now;
  }
}

export interface BenchAws {
  aws: LocalAws;
  /** The clock of the Scheduler stand-in; give it to the platform too. */
  clock: OffsetClock;
  /** The DynamoDB Local JVM, to read its CPU time. */
  dynamodbPid: number;
  /** Stops everything; throws if the DynamoDB Local JVM is still alive afterwards. */
  stop(): Promise<void>;
}

/** An absolute path to `java` ($JAVA_HOME/bin/java, else the first on PATH), or undefined. */
function javaPath(): string | undefined {
  const candidates = [
    ...(process.env.JAVA_HOME ? [join(process.env.JAVA_HOME, 'bin', 'java')] : []),
    ...(process.env.PATH ?? '')
      .split(delimiter)
      .filter(Boolean)
      .map((dir) => join(dir, 'java')),
  ];
  return candidates.find((candidate) => {
    try {
      accessSync(candidate, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

export async function startBenchAws(): Promise<BenchAws> {
  const java = javaPath();
  const dynamodb = await startDynamoDbLocal(java ? { java } : {});
  const clock = new OffsetClock();
  let aws: LocalAws;
  try {
    aws = await startLocalAws({ clock, autoFire: false, dynamodbEndpoint: dynamodb.endpoint });
  } catch (error) {
    await dynamodb.stop();
    throw error;
  }
  return {
    aws,
    clock,
    dynamodbPid: dynamodb.pid,
    async stop() {
      try {
        await aws.stop();
      } finally {
        await dynamodb.stop();
      }
      if (processAlive(dynamodb.pid)) throw new Error(`DynamoDB Local (pid ${dynamodb.pid}) is still running`);
    },
  };
}
