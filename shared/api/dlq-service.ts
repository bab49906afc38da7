import type { z } from 'zod';
import type { PlatformConfig, Route } from '../config';
import type { Clock } from '../core/clock';
import type { DeadLetterQueues, RedriveLog, RedriveRecord } from '../core/control-ports';
import { NotFoundError, ValidationError } from '../errors';
import { errorFields, type Logger } from '../logger';
import type { dlqPeekSchema, redriveResultSchema } from './schemas';

/** Messages the fallback redrive moves per request unless told otherwise. */
export const REDRIVE_DEFAULT_MESSAGES = 100;
/** Time the fallback redrive may take per request (the API function's timeout is 10 s). */
export const REDRIVE_TIME_BUDGET_MS = 5_000;
/** How long a received DLQ message stays hidden while it is copied: it reappears if we stop midway. */
export const REDRIVE_VISIBILITY_SECONDS = 30;

export interface DlqServiceDeps {
  config: PlatformConfig;
  deadLetters: DeadLetterQueues;
  /** Each type's last redrive: written by a redrive, answered by `GET /dlq`. */
  redrives: RedriveLog;
  clock: Clock;
  log: Logger;
}

type Redrive = z.output<typeof redriveResultSchema>;

type DlqRoute = Route & { dlqUrl: string; dlqArn: string };

/** `GET /dlq` and `POST /dlq/redrive`: look at a job type's dead-letter queue and move it back. */
export class DlqService {
  constructor(private readonly deps: DlqServiceDeps) {}

  private route(type: string): DlqRoute {
    const route = this.deps.config.routes[type];
    if (!route) {
      throw new ValidationError(
        `unknown job type "${type}"`,
        [{ path: 'type', message: `must be one of: ${Object.keys(this.deps.config.routes).sort().join(', ')}` }],
        'unknown_type',
      );
    }
    if (route.dlqUrl === undefined || route.dlqArn === undefined) {
      throw new NotFoundError(`no dead-letter queue is configured for job type "${type}"`, 'dlq_not_found');
    }
    return route as DlqRoute;
  }

  /**
   * Up to `limit` (≤ 10) messages of the DLQ, left in place (received with visibility 0), and the
   * type's last redrive (one GetItem, beside the depth's GetQueueAttributes). A read that fails
   * fails the call (429/503): `lastRedrive: null` says "never redriven", so it is not a stand-in
   * for "unknown".
   */
  async peek(type: string, limit: number): Promise<z.output<typeof dlqPeekSchema>> {
    const route = this.route(type);
    // Depth (and the record) first: the peek's receive counts its messages as in flight for a moment.
    const [depth, last] = await Promise.all([this.deps.deadLetters.depth(route.dlqUrl), this.deps.redrives.last(type)]);
    const messages = await this.deps.deadLetters.peek(route.dlqUrl, limit);
    return { type, approximateDepth: depth, messages, lastRedrive: last ? lastRedriveOf(last) : null };
  }

  /**
   * Moves the DLQ's messages back to the ready queue. SQS's own message move task first; where
   * the endpoint lacks it, a bounded loop that sends each message to the ready queue first and
   * deletes it from the DLQ only after the send succeeded, so a message is never dropped (a
   * failed delete leaves a duplicate, which the job's lease makes harmless).
   */
  async redrive(
    type: string,
    options: {
      /** @default REDRIVE_DEFAULT_MESSAGES */
      maxMessages?: number;
      /** Who redrives (the caller's ARN, or `anonymous`): recorded as the type's last redrive. */
      by: string;
    },
  ): Promise<Redrive> {
    const route = this.route(type);
    const log = this.deps.log.child({ type });
    const at = new Date(this.deps.clock.now()).toISOString();
    const start = await this.deps.deadLetters.startMove({ dlqArn: route.dlqArn, destinationArn: route.queueArn });
    if (start.kind === 'started') {
      const depth = await this.deps.deadLetters.depth(route.dlqUrl).catch(() => undefined);
      log.info('DLQ redrive started (message move task)', { taskHandle: start.taskHandle });
      const result: Redrive = {
        method: 'move-task',
        status: 'started',
        taskHandle: start.taskHandle,
        approximateMessages: depth?.visible ?? null,
      };
      await this.record({ type, by: options.by, at, method: 'move-task' }, log);
      return result;
    }
    if (start.kind === 'running') {
      // a task started before (by this caller or another): this call started nothing, so it records nothing
      const toMove = start.toMove !== null && start.moved !== null ? Math.max(0, start.toMove - start.moved) : null;
      return { method: 'move-task', status: 'running', taskHandle: start.taskHandle, approximateMessages: toMove };
    }
    const result = await this.moveByHand(route, options.maxMessages ?? REDRIVE_DEFAULT_MESSAGES, log);
    // an empty DLQ: nothing moved, nothing to record
    if (result.moved > 0)
      await this.record({ type, by: options.by, at, method: 'receive-send', moved: result.moved }, log);
    return result;
  }

  /**
   * Records a redrive that started a move task or moved messages, after it (one PutItem). The
   * messages have moved whatever this write does, so its failure fails nothing: it is logged
   * (`could not record the DLQ redrive`), and the redrive's `operator action` log line and
   * metric still record it.
   */
  private async record(record: RedriveRecord, log: Logger): Promise<void> {
    try {
      await this.deps.redrives.record(record);
    } catch (error) {
      log.warn('could not record the DLQ redrive', { by: record.by, method: record.method, ...errorFields(error) });
    }
  }

  private async moveByHand(
    route: DlqRoute,
    maxMessages: number,
    log: Logger,
  ): Promise<Extract<Redrive, { method: 'receive-send' }>> {
    const { deadLetters, clock } = this.deps;
    const deadline = clock.now() + REDRIVE_TIME_BUDGET_MS;
    let moved = 0;
    let stoppedBy: 'empty' | 'limit' | 'time' | 'send_failed';
    for (;;) {
      if (moved >= maxMessages) {
        stoppedBy = 'limit';
        break;
      }
      if (clock.now() >= deadline) {
        stoppedBy = 'time';
        break;
      }
      const letters = await deadLetters.receive(
        route.dlqUrl,
        Math.min(10, maxMessages - moved),
        REDRIVE_VISIBILITY_SECONDS,
      );
      if (letters.length === 0) {
        stoppedBy = 'empty';
        break;
      }
      let sent: Set<number>;
      try {
        sent = await deadLetters.sendAll(
          route.queueUrl,
          letters.map((letter) => letter.body),
        );
      } catch (error) {
        if (moved === 0) throw error; // nothing moved: the caller gets the 429/503 and tries again
        log.warn('DLQ redrive stopped: sending to the ready queue failed', errorFields(error));
        stoppedBy = 'send_failed';
        break;
      }
      const handles = letters.filter((_, i) => sent.has(i)).map((letter) => letter.receiptHandle);
      const deleted = await deadLetters.deleteAll(route.dlqUrl, handles).catch((error: unknown) => {
        log.warn('sent DLQ messages to the ready queue but could not delete them; they will be duplicates', {
          count: handles.length,
          ...errorFields(error),
        });
        return 0;
      });
      if (deleted < handles.length)
        log.warn('some redriven messages stay in the DLQ as duplicates', { count: handles.length - deleted });
      moved += sent.size;
      if (sent.size < letters.length) {
        stoppedBy = 'send_failed'; // the unsent ones reappear in the DLQ after the visibility timeout
        break;
      }
    }
    const depth = await deadLetters.depth(route.dlqUrl).catch(() => ({ visible: 0, inFlight: 0 }));
    log.info('DLQ redrive by receive and send', { moved, stoppedBy });
    return { method: 'receive-send', moved, stoppedBy, remaining: depth.visible };
  }
}

/** The record as `GET /dlq` answers it: the type is the listing's own. */
function lastRedriveOf(record: RedriveRecord): NonNullable<z.output<typeof dlqPeekSchema>['lastRedrive']> {
  return {
    by: record.by,
    at: record.at,
    method: record.method,
    ...(record.moved !== undefined ? { moved: record.moved } : {}),
  };
}
