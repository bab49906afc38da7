/**
 * The puts of whole items: a new job's status item, its payload item (a payload too large to
 * ride on the status item) and an attempt's error item. Pure builders; the store sends them.
 */
import type { PutItemCommandInput } from '@aws-sdk/client-dynamodb';
import type { AttemptError, Job } from '../../core/job';
import { keyOf, N, S } from '../attributes';
import { errorItemOf, type Item, PAYLOAD_RETENTION_DAYS, payloadKey } from '../job-item';

/** A new job, unless its id is taken by a job still retained; a refusal returns the job there (ALL_OLD). */
export function createPut(tableName: string, job: Job, item: Item): PutItemCommandInput {
  return {
    TableName: tableName,
    Item: item,
    // A job past its retention is gone for readers (TTL deletes it up to ~48 h later): its id is free.
    ConditionExpression: 'attribute_not_exists(pk) OR expiresAt < :retainedUntil',
    ExpressionAttributeValues: { ':retainedUntil': N(Date.parse(job.createdAt) / 1000) },
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/**
 * The payload item: retained {@link PAYLOAD_RETENTION_DAYS} days after the job's `runAt`, past
 * the longest a job can live (its horizon, retries and retention), as nothing rewrites it.
 */
export function payloadPut(tableName: string, job: Job): PutItemCommandInput {
  const ttl = Math.floor(Date.parse(job.runAt) / 1000) + PAYLOAD_RETENTION_DAYS * 86_400;
  return {
    TableName: tableName,
    Item: {
      ...keyOf(payloadKey(job.id, job.createdAt, job.payloadHash)),
      payload: S(JSON.stringify(job.payload)),
      expiresAt: N(ttl),
    },
  };
}

/**
 * The `n`-th error of a job as an item of its own, retained until `expiresAt`. A replay of the
 * write that counted it (`replay`) puts it only if it is not there yet: the first try's error
 * stands, as the status item's does.
 */
export function errorPut(
  tableName: string,
  job: Job,
  n: number,
  error: AttemptError,
  expiresAt: number,
  replay = false,
): PutItemCommandInput {
  return {
    TableName: tableName,
    Item: errorItemOf(job, n, error, expiresAt),
    ...(replay ? { ConditionExpression: 'attribute_not_exists(pk)' } : {}),
  };
}
