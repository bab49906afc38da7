import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { ControlResult, JobControl } from '../core/control-ports';
import { jobDueAttributes } from '../core/due';
import type { Job } from '../core/job';
import type { JobState } from '../core/states';
import { keys } from '../core/table';
import { fromItem } from './dynamo-job-store';
import { translateAwsError } from './errors';

const S = (s: string): AttributeValue => ({ S: s });
const N = (n: number): AttributeValue => ({ N: String(n) });
const iso = (ms: number) => new Date(ms).toISOString();

/** `#state IN (:s0, :s1, ...)` and its values. */
function stateIn(states: readonly JobState[]): { expression: string; values: Record<string, AttributeValue> } {
  if (states.length === 0) throw new Error('stateIn needs at least one state');
  const values: Record<string, AttributeValue> = {};
  states.forEach((state, i) => {
    values[`:s${i}`] = S(state);
  });
  return { expression: `#state IN (${Object.keys(values).join(', ')})`, values };
}

/**
 * {@link JobControl} on the DynamoDB job table: every operator write is one conditional
 * `UpdateItem` on the job's current state (and type, which the state index key depends on),
 * returning the new item, or the item as it was when the condition failed.
 */
export class DynamoJobControl implements JobControl {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  /**
   * One conditional update. `replay` names what this write leaves behind (its target state and
   * `updatedAt`): when the condition fails because an earlier try of this very write was applied
   * (its response lost, the SDK retried), the item shows exactly that, and the write counts as
   * applied.
   */
  private async update(
    id: string,
    operation: string,
    update: string,
    condition: string,
    values: Record<string, AttributeValue>,
    names: Record<string, string> = {},
    replay?: { state: JobState; updatedAt: string },
  ): Promise<ControlResult> {
    try {
      const out = await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { pk: S(keys.job(id)) },
          UpdateExpression: update,
          ConditionExpression: `attribute_exists(pk) AND ${condition}`,
          ExpressionAttributeNames: { '#state': 'state', '#type': 'type', ...names },
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { kind: 'applied', job: fromItem(out.Attributes ?? {}) };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        if (!error.Item) return { kind: 'missing' };
        const job = fromItem(error.Item);
        const ours = replay !== undefined && job.state === replay.state && job.updatedAt === replay.updatedAt;
        return { kind: ours ? 'applied' : 'refused', job };
      }
      return translateAwsError(error, `DynamoDB UpdateItem (${operation})`);
    }
  }

  async cancel(input: {
    id: string;
    type: string;
    from: readonly JobState[];
    now: number;
    expiresAt: number;
  }): Promise<ControlResult> {
    const from = stateIn(input.from);
    return this.update(
      input.id,
      'cancel',
      'SET #state = :to, finishedAt = :now, updatedAt = :now, expiresAt = :ttl, gsi2pk = :gsi2pk ' +
        // finished: out of the supervisor's due index too. leaseExpiresAt stays: a running attempt
        // may go on until then, and a later retry must not start a second one beside it.
        'REMOVE leaseOwner, dueBucket, dueAt',
      `#type = :type AND ${from.expression}`,
      {
        ...from.values,
        ':type': S(input.type),
        ':to': S('cancelled'),
        ':now': S(iso(input.now)),
        ':ttl': N(input.expiresAt),
        ':gsi2pk': S(keys.byTypeState(input.type, 'cancelled', input.id)),
      },
      {},
      { state: 'cancelled', updatedAt: iso(input.now) },
    );
  }

  async restart(input: { id: string; type: string; from: readonly JobState[]; now: number }): Promise<ControlResult> {
    const from = stateIn(input.from);
    const due = jobDueAttributes({ id: input.id, state: 'queued', runAt: iso(input.now) });
    return this.update(
      input.id,
      'retry',
      'SET #state = :to, attempts = :zero, runAt = :now, updatedAt = :now, gsi2pk = :gsi2pk, ' +
        'retries = if_not_exists(retries, :zero) + :one, dueBucket = :dueBucket, dueAt = :dueAt ' +
        // a manual retry runs now: no dispatch deadline any more. leaseExpiresAt stays (see cancel):
        // the claim waits for it to pass.
        'REMOVE expiresAt, finishedAt, startedAt, leaseOwner, #result, progress, dispatchBy',
      `#type = :type AND ${from.expression}`,
      {
        ...from.values,
        ':type': S(input.type),
        ':to': S('queued'),
        ':zero': N(0),
        ':one': N(1),
        ':now': S(iso(input.now)),
        ':gsi2pk': S(keys.byTypeState(input.type, 'queued', input.id)),
        ':dueBucket': S(due.dueBucket ?? ''),
        ':dueAt': N(due.dueAt ?? input.now),
      },
      { '#result': 'result' },
      { state: 'queued', updatedAt: iso(input.now) },
    );
  }

  async undoRestart({ previous, retries }: { previous: Job; retries: number }): Promise<boolean> {
    const values: Record<string, AttributeValue> = {
      ':type': S(previous.type),
      ':queued': S('queued'),
      ':zero': N(0),
      ':retries': N(retries),
      ':to': S(previous.state),
      ':attempts': N(previous.attempts),
      ':runAt': S(previous.runAt),
      ':updatedAt': S(previous.updatedAt),
      ':gsi2pk': S(keys.byTypeState(previous.type, previous.state, previous.id)),
      ':one': N(1),
    };
    const sets = [
      '#state = :to',
      'attempts = :attempts',
      'runAt = :runAt',
      'updatedAt = :updatedAt',
      'gsi2pk = :gsi2pk',
      'retries = retries - :one',
    ];
    const optional: [string, AttributeValue | undefined][] = [
      ['finishedAt', previous.finishedAt === undefined ? undefined : S(previous.finishedAt)],
      ['startedAt', previous.startedAt === undefined ? undefined : S(previous.startedAt)],
      ['expiresAt', previous.expiresAt === undefined ? undefined : N(previous.expiresAt)],
      ['dispatchBy', previous.dispatchBy === undefined ? undefined : S(previous.dispatchBy)],
    ];
    for (const [name, value] of optional) {
      if (value === undefined) continue;
      sets.push(`${name} = :${name}`);
      values[`:${name}`] = value;
    }
    const result = await this.update(
      previous.id,
      'undo retry',
      `SET ${sets.join(', ')} REMOVE dueBucket, dueAt`,
      '#type = :type AND #state = :queued AND attempts = :zero AND retries = :retries',
      values,
    );
    return result.kind === 'applied';
  }
}
