/**
 * The fenced write: an UpdateItem conditioned on the job's lease token and `running` state, the
 * form of every write after a claim (heartbeat, progress, and the writes that end an attempt).
 * Pure builders; the store sends them and reads a refusal (`isOwnAppliedEnd`, else lease lost).
 */
import type { AttributeValue, UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import type { Job } from '../../core/job';
import type { JobCost } from '../../core/metrics';
import type { HeartbeatInput, ProgressInput } from '../../core/ports';
import type { JobState } from '../../core/states';
import { isSparseState, keys } from '../../core/table';
import { keyOf, N, S } from '../attributes';

/**
 * How an attempt-ending write ends it: it moves the job to `state`, rewrites the state index key
 * to match, and records the `writer`, so that a replay of our own applied write (response lost,
 * SDK retried) is told apart from another worker's write under the same token.
 */
export interface FencedEnd {
  state: JobState;
  writer: string;
  cost?: JobCost;
}

/** What a fenced write changes, before the fence and the end are added to it. */
export interface FencedUpdate {
  /** Names the write in errors: `DynamoDB UpdateItem (<operation>)`. */
  operation: string;
  set: string;
  remove?: string;
  values: Record<string, AttributeValue>;
  end?: FencedEnd;
  /** Return the whole item as written (`ALL_NEW`, no extra cost). @default the updated attributes, only for an error count */
  all?: boolean;
}

/** The UpdateItem of `update` on `job`, fenced by its lease token and the `running` state. */
export function fencedWrite(tableName: string, job: Job, update: FencedUpdate): UpdateItemCommandInput {
  const { end } = update;
  // An end in a sparse state (failed, held) enters the state index; no other end touches an index.
  const indexed = end !== undefined && isSparseState(end.state);
  const cost = end?.cost;
  const set = end
    ? `${update.set}, #state = :to, lastWriter = :writer${indexed ? ', gsi2pk = :gsi2pk' : ''}${cost ? ', cost = :cost' : ''}`
    : update.set;
  const expression = `SET ${set}${update.remove ? ` REMOVE ${update.remove}` : ''}`;
  return {
    TableName: tableName,
    Key: keyOf(keys.job(job.id)),
    UpdateExpression: expression,
    ConditionExpression: 'leaseToken = :token AND #state = :running',
    ExpressionAttributeNames: {
      '#state': 'state',
      ...(expression.includes('#result') ? { '#result': 'result' } : {}),
    },
    ExpressionAttributeValues: {
      ...update.values,
      ':token': N(job.leaseToken),
      ':running': S('running'),
      ...(end
        ? {
            ':to': S(end.state),
            ':writer': S(end.writer),
            ...(indexed ? { ':gsi2pk': S(keys.byTypeState(job.type, end.state, job.id)) } : {}),
            ...(cost ? { ':cost': { M: { requests: N(cost.requests), writeUnits: N(cost.writeUnits) } } } : {}),
          }
        : {}),
    },
    // the error count a retry or fail just wrote (it names the error's own item)
    ...(update.all
      ? { ReturnValues: 'ALL_NEW' as const }
      : expression.includes('errorCount')
        ? { ReturnValues: 'UPDATED_NEW' as const }
        : {}),
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/** A heartbeat: the lease extended to `now + leaseMs`. */
export function heartbeatUpdate({ now, leaseMs }: HeartbeatInput): FencedUpdate {
  return { operation: 'heartbeat', set: 'leaseExpiresAt = :exp', values: { ':exp': N(now + leaseMs) } };
}

/** The running attempt's progress. */
export function progressUpdate({ progress }: ProgressInput): FencedUpdate {
  return { operation: 'progress', set: 'progress = :progress', values: { ':progress': S(JSON.stringify(progress)) } };
}
