import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { cancelledJob, MAX_CONTROLS, pastRetention, restartedJob } from '../core/control';
import type { CancelInput, ControlResult, JobControl, RerunChange, RestartInput } from '../core/control-ports';
import { jobDueAttributes } from '../core/due';
import type { Job, OperatorAction } from '../core/job';
import type { JobState } from '../core/states';
import { isSparseState, keys } from '../core/table';
import { keyOf, N, S } from './attributes';
import { translateAwsError } from './errors';
import { CANCELLED_KEY, payloadIsExternal, payloadKey, withHistory } from './job-item';
import { payloadPut } from './job-store/item-writes';

const iso = (ms: number) => new Date(ms).toISOString();

/** `<path> IN (:<prefix>0, ...)` and its values; IN takes at most 100 values, so longer lists OR several. */
function valueIn(
  path: string,
  prefix: string,
  list: readonly string[],
): { expression: string; values: Record<string, AttributeValue> } {
  if (list.length === 0) throw new Error('valueIn needs at least one value');
  const values: Record<string, AttributeValue> = {};
  const groups: string[] = [];
  for (let start = 0; start < list.length; start += 100) {
    const names = list.slice(start, start + 100).map((value, i) => {
      values[`:${prefix}${start + i}`] = S(value);
      return `:${prefix}${start + i}`;
    });
    groups.push(`${path} IN (${names.join(', ')})`);
  }
  return { expression: groups.length === 1 ? (groups[0] as string) : `(${groups.join(' OR ')})`, values };
}

/** `#state IN (:s0, :s1, ...)` and its values. */
function stateIn(states: readonly JobState[]): { expression: string; values: Record<string, AttributeValue> } {
  if (states.length === 0) throw new Error('stateIn needs at least one state');
  return valueIn('#state', 's', states);
}

/**
 * What a control write does to the job's operator actions (none without `by`): appends one,
 * on the condition that the list holds fewer than {@link MAX_CONTROLS}; or, when a first try
 * found it full (`seen`), sets the newest ones kept plus this one, on the condition that the
 * list is still the one seen: its length and its last entry (another operator's write in
 * between changes the last entry, so this one is refused rather than erase it).
 */
function controlEntry(
  action: OperatorAction['action'],
  input: { now: number; by?: string },
  seen?: readonly OperatorAction[],
): { set: string; condition: string[]; values: Record<string, AttributeValue>; names: Record<string, string> } {
  if (input.by === undefined) return { set: '', condition: [], values: {}, names: {} };
  const entry: OperatorAction = { action, by: input.by, at: iso(input.now) };
  const encode = (a: OperatorAction): AttributeValue => ({ M: { action: S(a.action), by: S(a.by), at: S(a.at) } });
  if (seen === undefined) {
    return {
      set: ', controls = list_append(if_not_exists(controls, :noControls), :control)',
      condition: ['(attribute_not_exists(controls) OR size(controls) < :maxControls)'],
      values: { ':noControls': { L: [] }, ':control': { L: [encode(entry)] }, ':maxControls': N(MAX_CONTROLS) },
      names: {},
    };
  }
  const last = seen.at(-1) as OperatorAction;
  const at = `controls[${seen.length - 1}]`;
  return {
    set: ', controls = :controls',
    condition: [
      `size(controls) = :seenControls AND ${at}.#ctlAction = :lastAction AND ${at}.#ctlBy = :lastBy AND ${at}.#ctlAt = :lastAt`,
    ],
    values: {
      ':controls': { L: [...seen, entry].slice(-MAX_CONTROLS).map(encode) },
      ':seenControls': N(seen.length),
      ':lastAction': S(last.action),
      ':lastBy': S(last.by),
      ':lastAt': S(last.at),
    },
    names: { '#ctlAction': 'action', '#ctlBy': 'by', '#ctlAt': 'at' },
  };
}

/** Trims a full history at most this many times per call (each after another operator's write changed it). */
const MAX_TRIMS = 3;

/**
 * The full operator-action list of a job a write refused, when that list is the only reason
 * (the job is in a state the write takes, of its type, retained): the write is then tried again,
 * trimming. Undefined otherwise: the refusal stands.
 */
function fullControls(
  input: { by?: string; from: readonly JobState[]; now: number; type?: string; types?: readonly string[] },
  result: ControlResult,
): OperatorAction[] | undefined {
  if (input.by === undefined || result.kind !== 'refused') return undefined;
  const { job } = result;
  const controls = job.controls ?? [];
  if (controls.length < MAX_CONTROLS) return undefined;
  const eligible =
    input.from.includes(job.state) &&
    !pastRetention(job, input.now) &&
    (input.type === undefined || job.type === input.type) &&
    (input.types === undefined || input.types.includes(job.type));
  return eligible ? controls : undefined;
}

/** Not past its retention (a job whose `expiresAt` is before now is gone for callers). */
const RETAINED = '(attribute_not_exists(expiresAt) OR expiresAt >= :nowSeconds)';

/** What {@link DynamoJobControl.update} found: the result, and whether a refused item predates the stored state keys. */
type Outcome = { result: ControlResult; legacy: boolean };

/**
 * {@link JobControl} on the DynamoDB job table: every operator write is one conditional
 * `UpdateItem` on the job's current state, with no read before it. It returns the item as it
 * was (`ALL_OLD`, on success and on a failed condition alike), from which the previous state
 * and the new job follow. A cancel's state index key comes from the attribute the create wrote
 * (`gsi2pkCancelled`), so the type need not be known; an item written before that attribute
 * existed is refused once, then written with the type its old image names.
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
   * applied. `next` builds the new job from the old one, as the update expression does.
   */
  private async update(input: {
    id: string;
    operation: string;
    update: string;
    condition: string;
    values: Record<string, AttributeValue>;
    names?: Record<string, string>;
    /**
     * What this write leaves behind, to tell its own replay (a lost answer) from another write:
     * the state and time, and for a rerun its journal series (two writes may share a millisecond).
     */
    replay?: { state: JobState; updatedAt: string; journal?: string };
    next: (old: Job) => Job;
    legacyKey?: string;
  }): Promise<Outcome> {
    const used = `${input.update} ${input.condition}`;
    const names = Object.fromEntries(
      Object.entries({ '#state': 'state', '#type': 'type', ...input.names }).filter(([name]) => used.includes(name)),
    );
    try {
      const out = await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: keyOf(keys.job(input.id)),
          UpdateExpression: input.update,
          ConditionExpression: `attribute_exists(pk) AND ${input.condition}`,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: input.values,
          ReturnValues: 'ALL_OLD',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      // with its error history (read only for a job that has errors): the answer shows it
      const previous = await withHistory(this.client, this.tableName, out.Attributes ?? {});
      return { result: { kind: 'applied', job: input.next(previous), previous }, legacy: false };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        if (!error.Item) return { result: { kind: 'missing' }, legacy: false };
        // as every job the adapters return: with its error history (read only when it has errors)
        const job = await withHistory(this.client, this.tableName, error.Item);
        const { replay } = input;
        const ours =
          replay !== undefined &&
          job.state === replay.state &&
          job.updatedAt === replay.updatedAt &&
          (replay.journal === undefined || job.journal === replay.journal);
        const legacy = input.legacyKey !== undefined && error.Item[input.legacyKey] === undefined;
        return { result: { kind: ours ? 'applied' : 'refused', job }, legacy };
      }
      return translateAwsError(error, `DynamoDB UpdateItem (${input.operation})`);
    }
  }

  async cancel(input: CancelInput): Promise<ControlResult> {
    return this.cancelWith(input);
  }

  private async cancelWith(input: CancelInput, seen?: readonly OperatorAction[], trims = 0): Promise<ControlResult> {
    const from = stateIn(input.from);
    const typed = input.type !== undefined;
    const control = controlEntry('cancel', input, seen);
    // No type matches '' (job types are never empty): an empty list refuses every job.
    const types =
      input.types === undefined ? undefined : valueIn('#type', 't', input.types.length > 0 ? input.types : ['']);
    const { result, legacy } = await this.update({
      id: input.id,
      operation: 'cancel',
      update:
        `SET #state = :to, finishedAt = :now, updatedAt = :now, expiresAt = :ttl, gsi2pk = ${typed ? ':gsi2pk' : CANCELLED_KEY}${control.set} ` +
        // leaseExpiresAt stays: a running attempt may go on until then, and a later retry must
        // not start a second one beside it. A due entry stays too (the supervisor finds the job
        // finished): removing it would cost index writes.
        'REMOVE leaseOwner',
      condition: [
        from.expression,
        RETAINED,
        typed ? '#type = :type' : `attribute_exists(${CANCELLED_KEY})`,
        ...(types ? [types.expression] : []),
        ...control.condition,
      ].join(' AND '),
      values: {
        ...from.values,
        ...(types?.values ?? {}),
        ':to': S('cancelled'),
        ':now': S(iso(input.now)),
        ':ttl': N(input.expiresAt),
        ':nowSeconds': N(input.now / 1000),
        ...control.values,
        ...(input.type !== undefined
          ? { ':type': S(input.type), ':gsi2pk': S(keys.byTypeState(input.type, 'cancelled', input.id)) }
          : {}),
      },
      names: control.names,
      replay: { state: 'cancelled', updatedAt: iso(input.now) },
      next: (old) => cancelledJob(old, input),
      ...(typed ? {} : { legacyKey: CANCELLED_KEY }),
    });
    if (
      legacy &&
      result.kind === 'refused' &&
      input.from.includes(result.job.state) &&
      !pastRetention(result.job, input.now)
    )
      return this.cancelWith({ ...input, type: result.job.type }, seen, trims);
    const full = trims < MAX_TRIMS ? fullControls(input, result) : undefined;
    return full ? this.cancelWith(input, full, trims + 1) : result;
  }

  async restart(input: RestartInput): Promise<ControlResult> {
    return this.restartWith(input);
  }

  private async restartWith(input: RestartInput, seen?: readonly OperatorAction[], trims = 0): Promise<ControlResult> {
    const from = stateIn(input.from);
    const control = controlEntry(input.rerun ? 'rerun' : 'retry', input, seen);
    // No type matches '' (job types are never empty): an empty list refuses every job.
    const types =
      input.types === undefined ? undefined : valueIn('#type', 't', input.types.length > 0 ? input.types : ['']);
    // The creation sweep has long passed: the supervisor finds the job through its due entry.
    const due = jobDueAttributes({ id: input.id, state: 'queued', runAt: iso(input.now) });
    const rerun = input.rerun ? await this.rerunParts(input, input.rerun) : undefined;
    const { result } = await this.update({
      id: input.id,
      operation: input.rerun ? 'rerun' : 'retry',
      update:
        'SET #state = :to, attempts = :zero, runAt = :now, updatedAt = :now, ' +
        `retries = if_not_exists(retries, :zero) + :one, dueBucket = :dueBucket, dueAt = :dueAt${control.set}${rerun?.set ?? ''} ` +
        // a manual retry runs now: no dispatch deadline any more. leaseExpiresAt stays (see cancel):
        // the claim waits for it to pass. Queued is not a sparse state: out of byTypeState.
        // a job cancelled while it waited for its parents runs now: its count of them goes
        `REMOVE expiresAt, finishedAt, startedAt, leaseOwner, #result, progress, dispatchBy, gsi2pk, pendingParents, rel${rerun?.remove ?? ''}`,
      condition: [
        from.expression,
        RETAINED,
        ...(input.type !== undefined ? ['#type = :type'] : []),
        ...(types ? [types.expression] : []),
        ...control.condition,
        ...(rerun ? [rerun.condition] : []),
      ].join(' AND '),
      values: {
        ...from.values,
        ...(types?.values ?? {}),
        ':to': S('queued'),
        ':zero': N(0),
        ':one': N(1),
        ':now': S(iso(input.now)),
        ':nowSeconds': N(input.now / 1000),
        ':dueBucket': S(due.dueBucket ?? ''),
        ':dueAt': N(due.dueAt ?? input.now),
        ...control.values,
        ...(rerun?.values ?? {}),
        ...(input.type !== undefined ? { ':type': S(input.type) } : {}),
      },
      names: { '#result': 'result', ...control.names, ...(rerun?.names ?? {}) },
      // a rerun's series is its own: another rerun or a retry in the same millisecond is not its replay
      replay: { state: 'queued', updatedAt: iso(input.now), ...(input.rerun ? { journal: input.rerun.journal } : {}) },
      next: (old) => restartedJob(old, input),
    });
    const full = trims < MAX_TRIMS ? fullControls(input, result) : undefined;
    return full ? this.restartWith(input, full, trims + 1) : result;
  }

  /**
   * What a rerun adds to the restart's write: the journal series and `reruns` + 1; the corrected
   * payload, in the status item when the job still fits in one write unit with it (as at create),
   * else in its own item, written here first (1 write unit per KB); and the condition that the
   * job is still the incarnation and series the rerun read.
   */
  private async rerunParts(input: RestartInput, rerun: RerunChange) {
    const names: Record<string, string> = { '#journal': 'journal', '#reruns': 'reruns', '#createdAt': 'createdAt' };
    const values: Record<string, AttributeValue> = {
      ':journal': S(rerun.journal),
      ':seenCreatedAt': S(rerun.seen.createdAt),
      ...(rerun.seen.journal !== undefined ? { ':seenJournal': S(rerun.seen.journal) } : {}),
    };
    let set = ', #journal = :journal, #reruns = if_not_exists(#reruns, :zero) + :one';
    let remove = '';
    if (rerun.payload) {
      const next = restartedJob(rerun.seen, input);
      names['#payload'] = 'payload';
      names['#payloadHash'] = 'payloadHash';
      names['#payloadKey'] = 'payloadKey';
      values[':payloadHash'] = S(rerun.payload.hash);
      set += ', #payloadHash = :payloadHash';
      if (payloadIsExternal(next)) {
        // written before the status item names it, as an enqueue writes it: never overwritten (its key names its hash)
        try {
          await this.client.send(new PutItemCommand(payloadPut(this.tableName, next)));
        } catch (error) {
          return translateAwsError(error, 'DynamoDB PutItem (rerun payload)');
        }
        values[':payloadKey'] = S(payloadKey(next.id, next.createdAt, next.payloadHash));
        set += ', #payloadKey = :payloadKey';
        remove = ', #payload';
      } else {
        values[':payload'] = S(JSON.stringify(rerun.payload.value));
        set += ', #payload = :payload';
        remove = ', #payloadKey';
      }
    }
    const condition =
      '#createdAt = :seenCreatedAt AND ' +
      (rerun.seen.journal === undefined ? 'attribute_not_exists(#journal)' : '#journal = :seenJournal');
    return { set, remove, condition, names, values };
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
      ':one': N(1),
    };
    const sets = [
      '#state = :to',
      'attempts = :attempts',
      'runAt = :runAt',
      'updatedAt = :updatedAt',
      'retries = retries - :one',
    ];
    const indexed = isSparseState(previous.state);
    if (indexed) {
      sets.push('gsi2pk = :gsi2pk');
      values[':gsi2pk'] = S(keys.byTypeState(previous.type, previous.state, previous.id));
    }
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
    const { result } = await this.update({
      id: previous.id,
      operation: 'undo retry',
      // the due entry the retry wrote stays: the supervisor finds the job finished again
      update: `SET ${sets.join(', ')}${indexed ? '' : ' REMOVE gsi2pk'}`,
      condition: '#type = :type AND #state = :queued AND attempts = :zero AND retries = :retries',
      values,
      next: (old) => old,
    });
    return result.kind === 'applied';
  }
}
