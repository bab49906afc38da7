import type { z } from 'zod';
import type { PlatformConfig, Route } from '../config';
import type { Clock } from '../core/clock';
import type { DeadLetterQueues } from '../core/control-ports';
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
  clock: Clock;
  log: Logger;
}

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

  /** Up to `limit` (≤ 10) messages of the DLQ, left in place (received with visibility 0). */
  async peek(type: string, limit: number): Promise<z.output<typeof dlqPeekSchema>> {
    const route = this.route(type);
    // Depth first: the peek's receive counts its messages as in flight for a moment.
    const depth = await this.deps.deadLetters.depth(route.dlqUrl);
    const messages = await this.deps.deadLetters.peek(route.dlqUrl, limit);
    return { type, approximateDepth: depth, messages };
  }

  /**
   * Moves the DLQ's messages back to the ready queue. SQS's own message move task first; where
   * the endpoint lacks it, a bounded loop that sends each message to the ready queue first and
   * deletes it from the DLQ only after the send succeeded, so a message is never dropped (a
   * failed delete leaves a duplicate, which the job's lease makes harmless).
   */
  async redrive(type: string, maxMessages = REDRIVE_DEFAULT_MESSAGES): Promise<z.output<typeof redriveResultSchema>> {
    const route = this.route(type);
    const log = this.deps.log.child({ type });
    const start = await this.deps.deadLetters.startMove({ dlqArn: route.dlqArn, destinationArn: route.queueArn });
    if (start.kind === 'started') {
      const depth = await this.deps.deadLetters.depth(route.dlqUrl).catch(() => undefined);
      log.info('DLQ redrive started (message move task)', { taskHandle: start.taskHandle });
      return {
        method: 'move-task',
        status: 'started',
        taskHandle: start.taskHandle,
        approximateMessages: depth?.visible ?? null,
      };
    }
    if (start.kind === 'running') {
      const toMove = start.toMove !== null && start.moved !== null ? Math.max(0, start.toMove - start.moved) : null;
      return { method: 'move-task', status: 'running', taskHandle: start.taskHandle, approximateMessages: toMove };
    }
    return this.moveByHand(route, maxMessages, log);
  }

  private async moveByHand(
    route: DlqRoute,
    maxMessages: number,
    log: Logger,
  ): Promise<z.output<typeof redriveResultSchema>> {
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
