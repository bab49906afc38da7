/**
 * The writes of a job that waits: `suspend` (a running attempt ends to wait, fenced by its
 * lease), `wake` (a signal makes it due) and `markWaiting` (why a due job has not started).
 * Pure builders; the store sends them.
 */
import type { UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import { type Clause, TAKEOVER } from '../../core/claim-rule';
import type { Job } from '../../core/job';
import type { MarkWaitingInput, SuspendInput, WakeInput } from '../../core/ports';
import { CLAIMABLE_STATES } from '../../core/states';
import { keys } from '../../core/table';
import { keyOf, N, S } from '../attributes';
import { compileCondition } from './condition';
import { costAfter, ended } from './end-writes';
import type { FencedUpdate } from './fenced';

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * `waiting` until `runAt`: the attempt given back, `resumes` one up, the wait recorded and, for a
 * signal, `waitSignal` set to its name (removed otherwise).
 */
export function suspendUpdate({
  job,
  now,
  runAt,
  waitingFor,
  writer,
  cost,
  pendingParents,
}: SuspendInput): FencedUpdate {
  const attempts = Math.max(0, job.attempts - 1);
  const resumes = (job.resumes ?? 0) + 1;
  const signal = waitingFor.kind === 'signal' ? waitingFor.key : undefined;
  const changes: Partial<Job> = {
    attempts,
    state: 'waiting',
    runAt: iso(runAt),
    updatedAt: iso(now),
    lastWriter: writer,
    resumes,
    waitingFor,
    ...(signal === undefined ? {} : { waitSignal: signal }),
    ...(pendingParents === undefined ? {} : { pendingParents }),
  };
  const invoke = pendingParents !== undefined;
  return {
    operation: 'suspend',
    set:
      'runAt = :runAt, updatedAt = :now, attempts = :attempts, resumes = :resumes, waitingFor = :w' +
      (signal === undefined ? '' : ', waitSignal = :signal') +
      (invoke ? ', pendingParents = :pending, rel = :noEdges' : ''),
    // an invoke's wait counts its edges afresh (`rel` empty): each once, after this write
    remove: `leaseOwner, leaseExpiresAt${signal === undefined ? ', waitSignal' : ''}`,
    values: {
      ':runAt': S(iso(runAt)),
      ':now': S(iso(now)),
      ':attempts': N(attempts),
      ':resumes': N(resumes),
      ':w': S(JSON.stringify(waitingFor)),
      ...(signal === undefined ? {} : { ':signal': S(signal) }),
      ...(invoke ? { ':pending': N(pendingParents), ':noEdges': { M: {} } } : {}),
    },
    end: { state: 'waiting', writer, ...(cost ? { cost: costAfter(job, ended(job, changes), cost, [], 0) } : {}) },
  };
}

/** Due now, its signal consumed: only a job `waiting` for that signal. */
export function wakeWrite(tableName: string, { id, signal, now }: WakeInput): UpdateItemCommandInput {
  return {
    TableName: tableName,
    Key: keyOf(keys.job(id)),
    UpdateExpression: 'SET runAt = :now REMOVE waitSignal',
    ConditionExpression: '#state = :waiting AND waitSignal = :signal',
    ExpressionAttributeNames: { '#state': 'state' },
    ExpressionAttributeValues: { ':now': S(iso(now)), ':waiting': S('waiting'), ':signal': S(signal) },
    ReturnValues: 'ALL_NEW',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

const WAITING_TO_START: Clause = { kind: 'state-in', states: CLAIMABLE_STATES };

/**
 * `waitingFor` recorded on a job waiting to start; with `now`, also on a running job whose lease
 * may no longer be held (the claim rule's {@link TAKEOVER}: one a takeover will start).
 */
export function markWaitingWrite(
  tableName: string,
  { job, waitingFor, now }: MarkWaitingInput,
): UpdateItemCommandInput {
  const rule: Clause = now === undefined ? WAITING_TO_START : { kind: 'any', clauses: [WAITING_TO_START, TAKEOVER] };
  const condition = compileCondition(rule, { type: job.type, now: now ?? 0 });
  return {
    TableName: tableName,
    Key: keyOf(keys.job(job.id)),
    UpdateExpression: 'SET waitingFor = :w',
    ConditionExpression: condition.expression,
    ExpressionAttributeNames: condition.names,
    ExpressionAttributeValues: { ':w': S(JSON.stringify(waitingFor)), ...condition.values },
  };
}
