/**
 * The job table's shape, defined once. The CDK construct and the local AWS harness
 * both build the table from {@link JOB_TABLE}, so the two can never drift.
 *
 * Key design (see docs/data-model.md):
 * - `pk` = `job#<id>`: one item per job, spread by id.
 * - GSI `byType`: `gsi1pk` = `<type>#<shard>`, `gsi1sk` = `<createdAt>#<id>`, projecting only
 *   immutable attributes: written once at enqueue, never again; lists a type's jobs newest first
 *   (the summaries come from the table).
 * - GSI `byTypeState`: `gsi2pk` = `<type>#<state>#<shard>`, `gsi2sk` = `<createdAt>#<id>`.
 *   Rewritten on every state change; lists e.g. the failed jobs of a type.
 * - `<shard>` = FNV-1a(id) mod {@link SHARD_COUNT}: no single key value takes more than
 *   1/SHARD_COUNT of a type's writes, so a busy type does not throttle one partition.
 *   Readers query every shard and merge by `createdAt`.
 * - `expiresAt` (epoch seconds) is the TTL attribute, set when a job finishes.
 * - GSI `byDue` (sparse): `dueBucket` = `due#<yyyymmddhhmm>#<shard>`, `dueAt` (epoch ms). Only
 *   unfinished jobs and enabled recurring schedules carry it; the supervisor queries the minute
 *   buckets from its checkpoint to now to find lost work without scanning (see core/due.ts).
 */

/** Number of write shards per GSI key. Changing it needs a backfill of the GSI keys. */
export const SHARD_COUNT = 8;

export type KeyType = 'S' | 'N';

export interface IndexDefinition {
  name: string;
  partitionKey: string;
  sortKey: string;
  /** Non-key attributes copied into the index (INCLUDE projection). */
  include: string[];
}

export interface TableDefinition {
  partitionKey: string;
  attributes: Record<string, KeyType>;
  indexes: IndexDefinition[];
  ttlAttribute: string;
}

const SUMMARY = ['id', 'type', 'state', 'createdAt', 'runAt', 'attempts', 'finishedAt'];
/**
 * What `byType` projects: only attributes a job never changes, so its entry is written once, at
 * create, and no later write of the job touches the index. Listing by type reads the rest of
 * the summary from the table (`DynamoJobIndex`: one BatchGetItem per page).
 */
export const BY_TYPE_INCLUDE = ['id', 'type', 'createdAt'];

export const JOB_TABLE: TableDefinition = {
  partitionKey: 'pk',
  attributes: { pk: 'S', gsi1pk: 'S', gsi1sk: 'S', gsi2pk: 'S', gsi2sk: 'S', dueBucket: 'S', dueAt: 'N' },
  indexes: [
    { name: 'byType', partitionKey: 'gsi1pk', sortKey: 'gsi1sk', include: BY_TYPE_INCLUDE },
    { name: 'byTypeState', partitionKey: 'gsi2pk', sortKey: 'gsi2sk', include: SUMMARY },
    // Sparse: only unfinished jobs and enabled schedules carry dueBucket (see core/due.ts).
    { name: 'byDue', partitionKey: 'dueBucket', sortKey: 'dueAt', include: ['id', 'type', 'state'] },
  ],
  ttlAttribute: 'expiresAt',
};

/** FNV-1a 32-bit hash of a string. Stable across processes and runtimes. */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

export function shardOf(id: string): number {
  return fnv1a(id) % SHARD_COUNT;
}

export const keys = {
  job: (id: string) => `job#${id}`,
  byType: (type: string, id: string) => `${type}#${shardOf(id)}`,
  byTypeState: (type: string, state: string, id: string) => `${type}#${state}#${shardOf(id)}`,
  /** The `byType` / `byTypeState` partition of one shard, for readers that query every shard. */
  byTypeShard: (type: string, shard: number) => `${type}#${shard}`,
  byTypeStateShard: (type: string, state: string, shard: number) => `${type}#${state}#${shard}`,
  created: (createdAt: string, id: string) => `${createdAt}#${id}`,
};
