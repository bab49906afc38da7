/**
 * The claim's write: one UpdateItem that starts an attempt (state `running`, attempts and the
 * lease token one up, the lease recorded) under the claim rule's condition, compiled from
 * `CLAIM_RULE`. Pure: the store sends it.
 */
import type { UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import { CLAIM_RULE } from '../../core/claim-rule';
import type { ClaimInput } from '../../core/ports';
import { keys } from '../../core/table';
import { keyOf, N, S } from '../attributes';
import { compileCondition } from './condition';

const iso = (ms: number) => new Date(ms).toISOString();

/** The UpdateItem of a claim: the job as it was comes back when the condition refuses it (ALL_OLD). */
export function claimWrite(tableName: string, input: ClaimInput): UpdateItemCommandInput {
  const { id, type, owner, now, leaseMs, messageId } = input;
  const condition = compileCondition(CLAIM_RULE, { type, now });
  return {
    TableName: tableName,
    Key: keyOf(keys.job(id)),
    UpdateExpression:
      'SET #state = :running, attempts = attempts + :one, leaseToken = leaseToken + :one, leaseOwner = :owner, ' +
      'leaseExpiresAt = :exp, leaseMessage = :msg, startedAt = :now, updatedAt = :now REMOVE waitingFor, waitSignal',
    ConditionExpression: condition.expression,
    ExpressionAttributeNames: { ...condition.names, '#state': 'state' },
    ExpressionAttributeValues: {
      ...condition.values,
      ':running': S('running'),
      ':one': N(1),
      ':owner': S(owner),
      ':msg': S(messageId ?? '-'),
      ':exp': N(now + leaseMs),
      ':now': S(iso(now)),
    },
    ReturnValues: 'ALL_NEW',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}
