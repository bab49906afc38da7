/**
 * The in-memory mode's SQS, event source mappings and EventBridge Scheduler, in one loop over
 * what the production code sent through the fakes: every message `FakeJobQueue` recorded becomes
 * a message of its ready queue (visible once its delay is over), every visibility change it
 * recorded moves that message's return, and every one-time schedule `FakeJobScheduler` holds is
 * sent to its queue when the platform clock reaches its time (and deleted, as Scheduler's
 * `ActionAfterCompletion: DELETE` does).
 *
 * Visible messages are handed to the real worker in batches, as Lambda's event source mapping
 * does with `ReportBatchItemFailures`: a record the worker does not list in `batchItemFailures` is
 * deleted; a listed one (or every record of a batch that threw) stays, hidden until its
 * visibility timeout or the time the worker set; a message received more than `maxReceiveCount`
 * times moves to its dead-letter queue. Time is the platform clock's: with a `ManualClock`
 * nothing is due until the clock moves (`advance`), with the system clock a timer waits for the
 * next message or schedule.
 */
import { createHash } from 'node:crypto';
import type { Message } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { Clock } from '../../shared/core/clock';
import { lambdaContext } from './lambda-context';
import type { FakeDeadLetterQueues } from './memory-control';
import type { FakeJobQueue, FakeJobScheduler } from './memory-fakes';
import { failedMessageIds, toSqsEvent } from './sqs-event';

/** One job type's queues and worker. */
export interface DeliveryRoute {
  queueUrl: string;
  queueArn: string;
  dlqUrl: string;
  functionName: string;
  /** The worker's batch handler. */
  handler: (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | undefined>;
  /** The ready queue's visibility timeout: how long a received message stays hidden unless the worker says otherwise. */
  visibilityTimeoutSeconds: number;
  /** The function's timeout, for the Lambda context's remaining time. */
  timeoutMs: number;
}

export interface MemoryDeliveryOptions {
  queue: FakeJobQueue;
  scheduler: FakeJobScheduler;
  deadLetters: FakeDeadLetterQueues;
  clock: Clock;
  routes: readonly DeliveryRoute[];
  /** Receives before a message moves to its DLQ. */
  maxReceiveCount: number;
  /** Records per invocation (the event source mapping's BatchSize). */
  batchSize: number;
  /** Invocations at once per queue (ScalingConfig.MaximumConcurrency). */
  maxConcurrency: number;
  /** Deliver without being asked (after every send, and when the clock reaches a message). */
  auto: boolean;
}

interface Held {
  messageId: string;
  body: string;
  sentAt: number;
  visibleAt: number;
  receiveCount: number;
  firstReceivedAt?: number;
  receipt?: string;
}

/** What `runUntilIdle` and `advance` see of the loop. */
export interface DeliveryState {
  /** Invocations running now. */
  running: number;
  /** Messages visible now and not yet handed to a worker, plus schedules due now. */
  due: number;
  /** The earliest later time a message becomes visible or a schedule fires, if any. */
  next: number | undefined;
}

const md5 = (text: string) => createHash('md5').update(text).digest('hex');

export class MemoryDelivery {
  private readonly queues = new Map<string, Held[]>();
  private readonly routes = new Map<string, DeliveryRoute>();
  private readonly byArn = new Map<string, DeliveryRoute>();
  private readonly running = new Map<string, Set<Promise<void>>>();
  /** The job ids each running invocation was handed. */
  private readonly handed = new Map<Promise<void>, string[]>();
  private readonly unsubscribe: () => void;
  private sentSeen = 0;
  private visibilitySeen = 0;
  private readonly schedulesSeen = new Set<string>();
  private counter = 0;
  private scheduled = false;
  private wakeTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Messages sent to a queue no job type of this platform reads (another deployment's type). */
  readonly undeliverable: { queueUrl: string; body: string }[] = [];
  /** Errors thrown by a worker invocation (the whole batch then stays), newest last. */
  readonly errors: unknown[] = [];
  /** Invocations made so far. */
  invocations = 0;

  constructor(private readonly options: MemoryDeliveryOptions) {
    for (const route of options.routes) {
      this.routes.set(route.queueUrl, route);
      this.byArn.set(route.queueArn, route);
      this.queues.set(route.queueUrl, []);
      this.running.set(route.queueUrl, new Set());
    }
    // A ManualClock says when it moves: what became due is delivered then.
    const clock = options.clock as Clock & { onChange?: (listener: () => void) => () => void };
    this.unsubscribe = clock.onChange ? clock.onChange(() => this.kick()) : () => {};
  }

  /**
   * Takes in what the fakes recorded since the last look (sends, visibility changes) at the
   * clock's time, and lets the loop deliver. Called after every port call of the platform.
   */
  sync(): void {
    if (this.takeIn()) this.kick();
  }

  /** Takes in what the fakes recorded since the last look; true when there was anything. */
  private takeIn(): boolean {
    const now = this.options.clock.now();
    const { sent, visibility } = this.options.queue;
    let news = sent.length > this.sentSeen || visibility.length > this.visibilitySeen;
    const { schedules } = this.options.scheduler;
    for (const name of this.schedulesSeen) if (!schedules.has(name)) this.schedulesSeen.delete(name);
    for (const name of schedules.keys()) {
      if (this.schedulesSeen.has(name)) continue;
      this.schedulesSeen.add(name);
      news = true;
    }
    for (; this.sentSeen < sent.length; this.sentSeen++) {
      const entry = sent[this.sentSeen];
      if (entry) this.put(entry.queueUrl, JSON.stringify(entry.message), now + (entry.delaySeconds ?? 0) * 1000, now);
    }
    for (; this.visibilitySeen < visibility.length; this.visibilitySeen++) {
      const change = visibility[this.visibilitySeen];
      const held = change && this.queues.get(change.queueUrl)?.find((m) => m.receipt === change.receiptHandle);
      // SQS takes whole seconds, at most 12 h (the adapter rounds up the same way)
      if (held) held.visibleAt = now + Math.max(0, Math.min(43_200, Math.ceil(change.seconds))) * 1000;
    }
    return news;
  }

  /** Delivers what is due now: fires due schedules, then hands visible messages to the workers. */
  pump(): void {
    if (this.stopped) return;
    this.takeIn();
    const now = this.options.clock.now();
    for (const [name, schedule] of [...this.options.scheduler.schedules].sort((a, b) => a[1].fireAt - b[1].fireAt)) {
      if (schedule.fireAt > now) continue;
      this.options.scheduler.schedules.delete(name);
      const route = this.byArn.get(schedule.queueArn);
      if (route) this.put(route.queueUrl, JSON.stringify(schedule.message), now, now);
      else this.undeliverable.push({ queueUrl: schedule.queueArn, body: JSON.stringify(schedule.message) });
    }
    for (const route of this.routes.values()) {
      const running = this.running.get(route.queueUrl) as Set<Promise<void>>;
      while (running.size < this.options.maxConcurrency) {
        const batch = this.receive(route, now);
        if (batch.length === 0) break;
        const invocation = this.invoke(route, batch).catch((error: unknown) => this.remember(error));
        running.add(invocation);
        this.handed.set(
          invocation,
          batch.map((message) => jobIdOf(message.Body ?? '')),
        );
        void invocation.finally(() => {
          running.delete(invocation);
          this.handed.delete(invocation);
          this.kick();
        });
      }
    }
    this.armWakeTimer(now);
  }

  /** What is running, due and coming, at the clock's time. */
  state(): DeliveryState {
    const now = this.options.clock.now();
    let running = 0;
    for (const set of this.running.values()) running += set.size;
    let due = 0;
    let next: number | undefined;
    const later = (at: number) => {
      if (next === undefined || at < next) next = at;
    };
    for (const messages of this.queues.values()) {
      for (const message of messages) {
        if (message.visibleAt <= now) due++;
        else later(message.visibleAt);
      }
    }
    for (const schedule of this.options.scheduler.schedules.values()) {
      if (schedule.fireAt <= now) due++;
      else later(schedule.fireAt);
    }
    return { running, due, next };
  }

  /** Resolves when one of the running invocations ends (at once when none runs). */
  async anyInvocation(): Promise<void> {
    const all = [...this.running.values()].flatMap((set) => [...set]);
    if (all.length > 0) await Promise.race(all);
  }

  /** Job ids of the messages handed to the invocations that still run. */
  runningJobs(): string[] {
    return [...new Set([...this.handed.values()].flat())];
  }

  /** Messages of a queue, for inspection: body, receives, and when each is visible. */
  messages(queueUrl: string): { body: string; receiveCount: number; visibleAt: number }[] {
    return (this.queues.get(queueUrl) ?? []).map(({ body, receiveCount, visibleAt }) => ({
      body,
      receiveCount,
      visibleAt,
    }));
  }

  /**
   * Stops delivering; resolves once the running invocations have ended, or after `waitMs` of
   * real time (returning the job ids of those still running).
   */
  async stop(waitMs = 5_000): Promise<string[]> {
    this.stopped = true;
    this.unsubscribe();
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    let timer: NodeJS.Timeout | undefined;
    const all = Promise.all([...this.running.values()].flatMap((set) => [...set]));
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, waitMs);
    });
    await Promise.race([all, late]);
    clearTimeout(timer);
    return this.runningJobs();
  }

  private put(queueUrl: string, body: string, visibleAt: number, now: number): void {
    const queue = this.queues.get(queueUrl);
    if (!queue) {
      this.undeliverable.push({ queueUrl, body });
      return;
    }
    queue.push({ messageId: `m-${++this.counter}`, body, sentAt: now, visibleAt, receiveCount: 0 });
  }

  /** Receives up to a batch of visible messages, oldest visible first; moves those received too often to the DLQ. */
  private receive(route: DeliveryRoute, now: number): Message[] {
    const queue = this.queues.get(route.queueUrl) as Held[];
    const visible = queue.filter((m) => m.visibleAt <= now).sort((a, b) => a.visibleAt - b.visibleAt);
    const batch: Message[] = [];
    for (const held of visible) {
      if (batch.length >= this.options.batchSize) break;
      if (held.receiveCount >= this.options.maxReceiveCount) {
        queue.splice(queue.indexOf(held), 1);
        this.options.deadLetters.put(route.dlqUrl, held.body);
        continue;
      }
      held.receiveCount += 1;
      held.firstReceivedAt ??= now;
      held.receipt = `${held.messageId}#${held.receiveCount}`;
      held.visibleAt = now + route.visibilityTimeoutSeconds * 1000;
      batch.push({
        MessageId: held.messageId,
        ReceiptHandle: held.receipt,
        Body: held.body,
        MD5OfBody: md5(held.body),
        Attributes: {
          ApproximateReceiveCount: String(held.receiveCount),
          SentTimestamp: String(held.sentAt),
          SenderId: 'AIDAMEMORY',
          ApproximateFirstReceiveTimestamp: String(held.firstReceivedAt),
        },
      });
    }
    return batch;
  }

  /** One invocation of the worker, settled as the event source mapping does with ReportBatchItemFailures. */
  private async invoke(route: DeliveryRoute, batch: Message[]): Promise<void> {
    this.invocations += 1;
    const event = toSqsEvent(batch, route.queueArn);
    const context = lambdaContext({
      functionName: route.functionName,
      timeoutMs: route.timeoutMs,
      region: event.Records[0]?.awsRegion ?? 'us-east-1',
    });
    let outcome: { ok: true; result: unknown } | { ok: false };
    try {
      outcome = { ok: true, result: await route.handler(event, context) };
    } catch (error) {
      this.remember(error);
      outcome = { ok: false };
    }
    const failed = failedMessageIds(event, outcome);
    if (failed === 'all') return;
    const queue = this.queues.get(route.queueUrl) as Held[];
    for (const record of event.Records) {
      if (failed.has(record.messageId)) continue;
      // deleted with the receipt of its latest receive only, as SQS does
      const i = queue.findIndex((m) => m.receipt === record.receiptHandle);
      if (i >= 0) queue.splice(i, 1);
    }
  }

  private remember(error: unknown): void {
    this.errors.push(error);
    if (this.errors.length > 50) this.errors.shift();
  }

  /** Lets the loop run soon (once per turn of the event loop, however often it is asked). */
  private kick(): void {
    if (!this.options.auto || this.scheduled || this.stopped) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  /** With a clock that moves by itself: a real timer for the next message or schedule. */
  private armWakeTimer(now: number): void {
    if (!this.options.auto || 'onChange' in this.options.clock) return; // a ManualClock moves only when told
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    const { next } = this.state();
    if (next === undefined) return;
    this.wakeTimer = setTimeout(() => this.pump(), Math.max(0, next - now) + 1);
    this.wakeTimer.unref();
  }
}

function jobIdOf(body: string): string {
  try {
    const id = (JSON.parse(body) as { id?: unknown }).id;
    return typeof id === 'string' ? id : body;
  } catch {
    return body;
  }
}
