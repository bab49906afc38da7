import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  type PutItemCommandInput,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import type { AttemptError, Job } from '../core/job';
import { classifyRefusedClaim, isOwnAppliedEnd, wokenFor } from '../core/lease';
import type {
  ClaimInput,
  ClaimResult,
  EndWritten,
  ExpireInput,
  FailInput,
  HeartbeatInput,
  JobStore,
  MarkWaitingInput,
  ProgressInput,
  RetryInput,
  SkipInput,
  SucceedInput,
  SuspendInput,
  WakeInput,
} from '../core/ports';
import { keys } from '../core/table';
import { LeaseLostError } from '../errors';
import { keyOf } from './attributes';
import { translateAwsError } from './errors';
import {
  errorCountOf,
  fromItem,
  type Item,
  itemBytes,
  STATUS_ITEM_GROWTH_BYTES,
  toItem,
  withHistory,
} from './job-item';
import { claimWrite } from './job-store/claim-write';
import { expireWrite, failUpdate, retryUpdate, skipWrite, succeedUpdate } from './job-store/end-writes';
import { type FencedUpdate, fencedWrite, heartbeatUpdate, progressUpdate } from './job-store/fenced';
import { createPut, errorPut, payloadPut } from './job-store/item-writes';
import { markWaitingWrite, suspendUpdate, wakeWrite } from './job-store/wait-writes';

/**
 * {@link JobStore} on a DynamoDB table shaped by `JOB_TABLE`. Every state change is one
 * conditional write; writes after a claim are conditioned on the fencing token. The writes are
 * built by the pure builders of `./job-store/` (the claim's condition from the core claim rule);
 * this class sends them and reads their refusals.
 *
 * @example
 * const store = new DynamoJobStore(new DynamoDBClient({}), 'orrery-jobs');
 */
export class DynamoJobStore implements JobStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  private withHistory(item: Item): Promise<Job> {
    return withHistory(this.client, this.tableName, item);
  }

  /** Sends a put; a refused condition is not an error when `refusable` (returns false). */
  private async put(input: PutItemCommandInput, operation: string, refusable = false): Promise<boolean> {
    try {
      await this.client.send(new PutItemCommand(input));
      return true;
    } catch (e) {
      if (refusable && e instanceof ConditionalCheckFailedException) return false;
      return translateAwsError(e, `DynamoDB PutItem (${operation})`);
    }
  }

  /** Sends a conditional update; true when written, false when its condition refused it. */
  private async conditional(input: UpdateItemCommandInput, operation: string): Promise<boolean> {
    try {
      await this.client.send(new UpdateItemCommand(input));
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      return translateAwsError(error, `DynamoDB UpdateItem (${operation})`);
    }
  }

  async create(job: Job): Promise<{ created: true } | { created: false; existing: Job }> {
    // A payload the status item cannot hold with everything it gains later (1 KB) is written
    // once, as its own item, before the job: the status item, rewritten at every state change,
    // never carries it. Its key names the payload's hash, so a replay with another payload
    // (refused by the create below) never overwrites it.
    let item = toItem(job);
    if (itemBytes(item) + STATUS_ITEM_GROWTH_BYTES > 1024) {
      item = toItem(job, true);
      await this.put(payloadPut(this.tableName, job), 'payload');
    }
    try {
      await this.client.send(new PutItemCommand(createPut(this.tableName, job, item)));
      // A job is created without errors; a history given anyway (a test's seed) gets its items.
      const ttl = job.expiresAt ?? Math.floor(Date.parse(job.createdAt) / 1000) + 400 * 86_400;
      for (const [i, entry] of job.errors.entries()) {
        await this.put(errorPut(this.tableName, job, i + 1, entry, ttl), 'error history', true);
      }
      return { created: true };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException && error.Item) {
        return { created: false, existing: await this.withHistory(error.Item) };
      }
      return translateAwsError(error, 'DynamoDB PutItem (create job)');
    }
  }

  async get(id: string): Promise<Job | undefined> {
    try {
      const out = await this.client.send(
        new GetItemCommand({ TableName: this.tableName, Key: keyOf(keys.job(id)), ConsistentRead: true }),
      );
      return out.Item ? await this.withHistory(out.Item) : undefined;
    } catch (error) {
      return translateAwsError(error, 'DynamoDB GetItem');
    }
  }

  async claim(input: ClaimInput): Promise<ClaimResult> {
    try {
      const out = await this.client.send(new UpdateItemCommand(claimWrite(this.tableName, input)));
      return { kind: 'claimed', job: await this.withHistory(out.Attributes ?? {}) };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        if (!error.Item) return { kind: 'missing' };
        // Every job the store returns carries its error history (read only when it has errors:
        // a refused claim of a job that failed before is rare).
        const current = await this.withHistory(error.Item);
        // Our own claim, applied on an earlier try whose response was lost (the SDK retried
        // it): owners are unique per claim call, so this lease is ours.
        if (current.state === 'running' && current.leaseOwner === input.owner) return { kind: 'claimed', job: current };
        return classifyRefusedClaim(current, input.now, input.type);
      }
      return translateAwsError(error, 'DynamoDB UpdateItem (claim)');
    }
  }

  /**
   * Sends a fenced write ({@link fencedWrite}). A refused attempt-ending write that finds its own
   * end applied (a replay whose response was lost) returns the item as it is; any other refusal
   * throws {@link LeaseLostError}.
   */
  private async fenced(job: Job, update: FencedUpdate): Promise<Item | undefined> {
    try {
      const out = await this.client.send(new UpdateItemCommand(fencedWrite(this.tableName, job, update)));
      return out.Attributes;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        const current = error.Item ? fromItem(error.Item) : undefined;
        if (update.end && current && isOwnAppliedEnd(current, job.leaseToken, update.end)) return error.Item;
        throw new LeaseLostError(job.id, job.leaseToken);
      }
      return translateAwsError(error, `DynamoDB UpdateItem (${update.operation})`);
    }
  }

  /** After the fenced write that counted it, the attempt's error as an item of its own. */
  private async recordError(
    job: Job,
    written: Item | undefined,
    errors: readonly AttemptError[],
    expiresAt: number,
  ): Promise<void> {
    const last = errors.at(-1);
    const n = written ? errorCountOf(written) : 0;
    // `written` is the whole item (not just what was updated) when the write was a replay
    const replay = written?.pk !== undefined;
    if (last && n > 0) await this.put(errorPut(this.tableName, job, n, last, expiresAt, replay), 'error history', true);
  }

  async heartbeat(input: HeartbeatInput): Promise<void> {
    await this.fenced(input.job, heartbeatUpdate(input));
  }

  async progress(input: ProgressInput): Promise<void> {
    await this.fenced(input.job, progressUpdate(input));
  }

  async succeed(input: SucceedInput): Promise<EndWritten> {
    const written = await this.fenced(input.job, succeedUpdate(input));
    return { childCount: Number(written?.childCount?.N ?? 0) };
  }

  async retry(input: RetryInput): Promise<void> {
    const written = await this.fenced(input.job, retryUpdate(input));
    await this.recordError(input.job, written, input.errors, input.expiresAt);
  }

  async fail(input: FailInput): Promise<void> {
    const written = await this.fenced(input.job, failUpdate(input));
    await this.recordError(input.job, written, input.errors, input.expiresAt);
  }

  async suspend(input: SuspendInput): Promise<void> {
    await this.fenced(input.job, suspendUpdate(input));
  }

  async wake(input: WakeInput): Promise<Job | undefined> {
    try {
      const out = await this.client.send(new UpdateItemCommand(wakeWrite(this.tableName, input)));
      return fromItem(out.Attributes ?? {});
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        // woken already (a replay of this wake, its response lost; or another sender's): say so
        const current = error.Item ? fromItem(error.Item) : undefined;
        return current && wokenFor(current, input.signal, input.now) ? current : undefined;
      }
      return translateAwsError(error, 'DynamoDB UpdateItem (wake)');
    }
  }

  async markWaiting(input: MarkWaitingInput): Promise<boolean> {
    return this.conditional(markWaitingWrite(this.tableName, input), 'mark waiting');
  }

  async expire(input: ExpireInput): Promise<boolean> {
    return this.conditional(expireWrite(this.tableName, input), 'expire');
  }

  async skip(input: SkipInput): Promise<boolean> {
    return this.conditional(skipWrite(this.tableName, input), 'skip');
  }
}
