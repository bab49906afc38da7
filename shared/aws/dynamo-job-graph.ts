import {
  type AttributeValue,
  BatchGetItemCommand,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import {
  CHILDREN_CHUNK,
  type ChildEntry,
  type EdgeOutcome,
  type EdgeRelease,
  type FlowRecord,
  type JobGraph,
  type ParentEdge,
  type ParentPolicy,
  parentFailedError,
} from '../core/dependencies';
import type { Job } from '../core/job';
import { isTerminal, JOB_STATES, type JobState } from '../core/states';
import { createdAtOf, incarnationOf, keys, owned } from '../core/table';
import { keyOf, N, S } from './attributes';
import { translateAwsError } from './errors';
import { fromItem } from './job-item';

type Item = Record<string, AttributeValue>;

const iso = (ms: number) => new Date(ms).toISOString();

/** Key of a flow's item (`POST /flows`). */
export function flowKey(id: string): string {
  return `flow#${id}`;
}

/** Key of the parents item of one incarnation of a job: its `dependsOn`, as JSON. */
export function parentsKey(id: string, incarnation: string): string {
  return owned(id, incarnation, 'parents');
}

/**
 * Key of the `k`-th chunk of the registry of children of one incarnation of a parent (slots
 * `k*CHUNK+1 .. (k+1)*CHUNK`).
 */
export function childrenKey(id: string, incarnation: string, chunk: number): string {
  return owned(id, incarnation, `children#${chunk}`);
}

const chunkOf = (slot: number) => Math.floor((slot - 1) / CHILDREN_CHUNK);
/** A slot's attribute on its chunk item: top-level, so the first write creates the item. */
const slotName = (slot: number) => `s${slot}`;
/** What a sealed slot holds: a registration that comes later is refused. */
const TOMBSTONE = 'x';

/**
 * The states in which a parent still takes a child's registration: every one but the terminal
 * states. A `held` parent is among them (it has not ended: an operator's retry may still make
 * it succeed), as the domain's `isTerminal` says.
 */
const NOT_FINISHED: readonly JobState[] = JOB_STATES.filter((state) => !isTerminal(state));

/**
 * A slot's value: child, policy, index, the child's parent count and its incarnation (`t`, 8
 * characters) when known.
 */
function slotValue(entry: ChildEntry): Record<string, AttributeValue> {
  return {
    c: S(entry.child),
    p: S(entry.policy),
    i: N(entry.index),
    ...(entry.parents === undefined ? {} : { k: N(entry.parents) }),
    ...(entry.incarnation === undefined ? {} : { t: S(entry.incarnation) }),
  };
}

function entryOf(value: AttributeValue | undefined): ChildEntry | undefined {
  const m = value?.M;
  if (!m?.c?.S || !m.p?.S || m.i?.N === undefined) return undefined;
  return {
    child: m.c.S,
    policy: m.p.S as ParentPolicy,
    index: Number(m.i.N),
    ...(m.k?.N === undefined ? {} : { parents: Number(m.k.N) }),
    ...(m.t?.S === undefined ? {} : { incarnation: m.t.S }),
  };
}

/**
 * The condition that the child is the incarnation an edge names (`:createdAt`), and its value;
 * nothing for an entry written before entries named it.
 */
function sameChild(incarnation: string | undefined): { condition: string; values: Record<string, AttributeValue> } {
  return incarnation === undefined ? { condition: '', values: {} } : createdAtIs(createdAtOf(incarnation));
}

function createdAtIs(createdAt: string): { condition: string; values: Record<string, AttributeValue> } {
  return { condition: ' AND createdAt = :createdAt', values: { ':createdAt': S(createdAt) } };
}

/** Whether a job read back is another incarnation than the one an edge names. */
function otherIncarnation(job: Job, incarnation: string | undefined): boolean {
  return incarnation !== undefined && incarnationOf(job.createdAt) !== incarnation;
}

/** Whether a slot holds this very entry (a replay of its fill): the same child at the same index. */
function sameEntry(found: ChildEntry | undefined, entry: ChildEntry): boolean {
  return found !== undefined && found.child === entry.child && found.index === entry.index;
}

/**
 * {@link JobGraph} on the job table. A child's parents are one item
 * (`job#<id>#<incarnation>#parents`); a parent's children are chunk items
 * (`job#<id>#<incarnation>#children#<k>`, {@link CHILDREN_CHUNK} slots each,
 * ≤ 1 KB with ids of up to 55 characters) numbered by the parent's `childCount`; each entry names
 * its child's incarnation, and every release write on the child is conditioned on that
 * incarnation's `createdAt`; the release's counts live on the child's status item
 * (`pendingParents`, and `rel`: the edges counted, by index, removed when it leaves `waiting`).
 *
 * @example
 * const graph = new DynamoJobGraph(new DynamoDBClient({}), 'orrery-jobs');
 */
export class DynamoJobGraph implements JobGraph {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async putParents({
    child,
    incarnation,
    parents,
    expiresAt,
  }: {
    child: string;
    incarnation: string;
    parents: readonly ParentEdge[];
    expiresAt: number;
  }): Promise<void> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: {
            ...keyOf(parentsKey(child, incarnation)),
            parents: S(JSON.stringify(parents)),
            expiresAt: N(expiresAt),
          },
        }),
      );
    } catch (error) {
      translateAwsError(error, 'DynamoDB PutItem (parents)');
    }
  }

  async parents({ child, incarnation }: { child: string; incarnation: string }): Promise<ParentEdge[] | undefined> {
    try {
      const out = await this.client.send(
        new GetItemCommand({
          TableName: this.tableName,
          Key: keyOf(parentsKey(child, incarnation)),
          ConsistentRead: true,
        }),
      );
      const text = out.Item?.parents?.S;
      return text === undefined ? undefined : (JSON.parse(text) as ParentEdge[]);
    } catch (error) {
      return translateAwsError(error, 'DynamoDB GetItem (parents)');
    }
  }

  async addChild({
    parent,
  }: {
    parent: string;
  }): Promise<{ slot: number; incarnation: string } | { slot?: undefined; parent?: Job }> {
    try {
      const out = await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: keyOf(keys.job(parent)),
          UpdateExpression: 'ADD childCount :one',
          ConditionExpression: `attribute_exists(pk) AND #state IN (${NOT_FINISHED.map((s) => `:${s}`).join(', ')})`,
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: {
            ':one': N(1),
            ...Object.fromEntries(NOT_FINISHED.map((s) => [`:${s}`, S(s)])),
          },
          // the whole item (no extra cost): its createdAt names the registry the slot is in
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return {
        slot: Number(out.Attributes?.childCount?.N),
        incarnation: incarnationOf(out.Attributes?.createdAt?.S ?? ''),
      };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return error.Item ? { parent: fromItem(error.Item) } : {};
      return translateAwsError(error, 'DynamoDB UpdateItem (count child)');
    }
  }

  async fillSlot({
    parent,
    incarnation,
    slot,
    entry,
    expiresAt,
  }: {
    parent: string;
    incarnation: string;
    slot: number;
    entry: ChildEntry;
    expiresAt: number;
  }): Promise<boolean> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: keyOf(childrenKey(parent, incarnation, chunkOf(slot))),
          UpdateExpression: 'SET #slot = :entry, expiresAt = if_not_exists(expiresAt, :ttl)',
          ConditionExpression: 'attribute_not_exists(#slot)',
          ExpressionAttributeNames: { '#slot': slotName(slot) },
          ExpressionAttributeValues: {
            ':entry': { M: slotValue(entry) },
            ':ttl': N(expiresAt),
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return true;
    } catch (error) {
      // Refused: sealed by the release, or filled by an earlier try of this very write (its
      // response lost, the SDK retried), which is success.
      if (error instanceof ConditionalCheckFailedException)
        return sameEntry(entryOf(error.Item?.[slotName(slot)]), entry);
      return translateAwsError(error, 'DynamoDB UpdateItem (child slot)');
    }
  }

  async putChildren({
    parent,
    incarnation,
    entries,
    expiresAt,
  }: {
    parent: string;
    incarnation: string;
    entries: readonly ChildEntry[];
    expiresAt: number;
  }): Promise<void> {
    for (let start = 0; start < entries.length; start += CHILDREN_CHUNK) {
      const chunk = entries.slice(start, start + CHILDREN_CHUNK);
      const names: Record<string, string> = {};
      const values: Record<string, AttributeValue> = { ':ttl': N(expiresAt) };
      const sets = chunk.map((entry, j) => {
        const slot = start + j + 1;
        names[`#s${slot}`] = slotName(slot);
        values[`:e${slot}`] = { M: slotValue(entry) };
        return `#s${slot} = if_not_exists(#s${slot}, :e${slot})`;
      });
      try {
        await this.client.send(
          new UpdateItemCommand({
            TableName: this.tableName,
            Key: keyOf(childrenKey(parent, incarnation, chunkOf(start + 1))),
            UpdateExpression: `SET ${sets.join(', ')}, expiresAt = if_not_exists(expiresAt, :ttl)`,
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
          }),
        );
      } catch (error) {
        translateAwsError(error, 'DynamoDB UpdateItem (children of a new job)');
      }
    }
  }

  async children({
    parent,
    incarnation,
    count,
    seal = true,
  }: {
    parent: string;
    incarnation: string;
    count: number;
    seal?: boolean;
  }): Promise<ChildEntry[]> {
    if (count <= 0) return [];
    const chunkKeys = Array.from({ length: chunkOf(count) + 1 }, (_, k) => childrenKey(parent, incarnation, k));
    const items = await this.batchGet(chunkKeys);
    const entries: ChildEntry[] = [];
    for (let slot = 1; slot <= count; slot++) {
      const value = items.get(childrenKey(parent, incarnation, chunkOf(slot)))?.[slotName(slot)];
      const entry = entryOf(value);
      if (entry) {
        entries.push(entry);
        continue;
      }
      if (value?.S === TOMBSTONE || !seal) continue;
      const late = await this.seal(parent, incarnation, slot);
      if (late) entries.push(late);
    }
    return entries;
  }

  /** Seals an empty slot; returns the entry that landed first, if one did. */
  private async seal(parent: string, incarnation: string, slot: number): Promise<ChildEntry | undefined> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: keyOf(childrenKey(parent, incarnation, chunkOf(slot))),
          UpdateExpression: 'SET #slot = :tomb',
          ConditionExpression: 'attribute_not_exists(#slot)',
          ExpressionAttributeNames: { '#slot': slotName(slot) },
          ExpressionAttributeValues: { ':tomb': S(TOMBSTONE) },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return undefined;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return entryOf(error.Item?.[slotName(slot)]);
      return translateAwsError(error, 'DynamoDB UpdateItem (seal child slot)');
    }
  }

  async release(input: {
    child: string;
    index: number;
    outcome: EdgeOutcome;
    parent: string;
    parentState: JobState;
    now: number;
    expiresAt: number;
    only?: boolean;
    incarnation?: string;
  }): Promise<EdgeRelease> {
    const { child, index, outcome, parent, parentState, now, expiresAt, incarnation } = input;
    if (input.only && outcome.kind === 'resolve') {
      const woken = await this.releaseOnly(child, index, now, incarnation);
      if (woken) return woken;
    }
    const names = { '#state': 'state', '#i': String(index) };
    if (outcome.kind === 'end' && outcome.state === 'failed') {
      // the failed state's index key names the type: read it first (a rare path)
      return this.endFailed(child, index, parent, parentState, now, expiresAt, incarnation);
    }
    const same = sameChild(incarnation);
    const condition = `#state = :waiting AND attribute_exists(pendingParents) AND attribute_not_exists(rel.#i)${same.condition}`;
    let command: UpdateItemCommand;
    if (outcome.kind === 'resolve') {
      command = new UpdateItemCommand({
        TableName: this.tableName,
        Key: keyOf(keys.job(child)),
        UpdateExpression: 'SET rel.#i = :one, updatedAt = :now ADD pendingParents :minusOne',
        // never below zero: a child at zero waits only for the wake a dead release left undone
        ConditionExpression: `${condition} AND pendingParents > :zero`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: {
          ':waiting': S('waiting'),
          ':one': N(1),
          ':now': S(iso(now)),
          ':minusOne': N(-1),
          ':zero': N(0),
          ...same.values,
        },
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      });
    } else {
      const error = parentFailedError(parent, parentState, now);
      command = new UpdateItemCommand({
        TableName: this.tableName,
        Key: keyOf(keys.job(child)),
        UpdateExpression:
          'SET #state = :to, finishedAt = :now, updatedAt = :now, expiresAt = :ttl, lastError = :error, ' +
          '#errors = :history, gsi2pk = #cancelledKey REMOVE pendingParents, rel',
        ConditionExpression: condition,
        ExpressionAttributeNames: { ...names, '#cancelledKey': 'gsi2pkCancelled', '#errors': 'errors' },
        ExpressionAttributeValues: {
          ':waiting': S('waiting'),
          ':to': S(outcome.state),
          ':now': S(iso(now)),
          ':ttl': N(expiresAt),
          ':error': S(JSON.stringify(error)),
          ':history': S(JSON.stringify([error])),
          ...same.values,
        },
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      });
    }
    try {
      const out = await this.client.send(command);
      const job = fromItem(out.Attributes ?? {});
      if (outcome.kind === 'end') return { kind: 'ended', job };
      if (job.pendingParents === 0) return this.wake(job, now);
      return { kind: 'counted', job };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return this.refused(error.Item, now, incarnation);
      return translateAwsError(error, 'DynamoDB UpdateItem (release edge)');
    }
  }

  /**
   * The release of a child's only parent, as one write: `queued` at once, when it waits for that
   * parent alone and is due by now. Undefined when refused (a later runAt, a replay, a child that
   * does not wait): the caller then takes the two-write path, which tells them apart.
   */
  private async releaseOnly(
    child: string,
    index: number,
    now: number,
    incarnation: string | undefined,
  ): Promise<EdgeRelease | undefined> {
    const same = sameChild(incarnation);
    try {
      const out = await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: keyOf(keys.job(child)),
          UpdateExpression: 'SET #state = :queued, runAt = :now, updatedAt = :now REMOVE pendingParents, rel',
          ConditionExpression: `#state = :waiting AND pendingParents = :one AND attribute_not_exists(rel.#i) AND runAt <= :now${same.condition}`,
          ExpressionAttributeNames: { '#state': 'state', '#i': String(index) },
          ExpressionAttributeValues: {
            ':queued': S('queued'),
            ':waiting': S('waiting'),
            ':one': N(1),
            ':now': S(iso(now)),
            ...same.values,
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return { kind: 'ready', job: fromItem(out.Attributes ?? {}) };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return undefined;
      return translateAwsError(error, 'DynamoDB UpdateItem (release an only parent)');
    }
  }

  /** Ends a waiting child `failed` by its parent (its index key written from its type). */
  private async endFailed(
    child: string,
    index: number,
    parent: string,
    parentState: JobState,
    now: number,
    expiresAt: number,
    incarnation: string | undefined,
  ): Promise<EdgeRelease> {
    const current = (await this.jobs([child])).get(child);
    // gone, or a later job that took the id: nothing to do for this edge
    if (!current || otherIncarnation(current, incarnation)) return { kind: 'refused' };
    const error = parentFailedError(parent, parentState, now);
    // the job read: its type names the index key, its createdAt the incarnation the write may touch
    const same = createdAtIs(current.createdAt);
    try {
      const out = await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: keyOf(keys.job(child)),
          UpdateExpression:
            'SET #state = :failed, finishedAt = :now, updatedAt = :now, expiresAt = :ttl, lastError = :error, ' +
            '#errors = :history, gsi2pk = :gsi2pk REMOVE pendingParents, rel',
          ConditionExpression: `#state = :waiting AND attribute_exists(pendingParents) AND attribute_not_exists(rel.#i)${same.condition}`,
          ExpressionAttributeNames: { '#state': 'state', '#i': String(index), '#errors': 'errors' },
          ExpressionAttributeValues: {
            ':waiting': S('waiting'),
            ':failed': S('failed'),
            ':now': S(iso(now)),
            ':ttl': N(expiresAt),
            ':error': S(JSON.stringify(error)),
            ':history': S(JSON.stringify([error])),
            ':gsi2pk': S(keys.byTypeState(current.type, 'failed', child)),
            ...same.values,
          },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { kind: 'ended', job: fromItem(out.Attributes ?? {}) };
    } catch (e) {
      if (e instanceof ConditionalCheckFailedException) return this.refused(e.Item, now, incarnation);
      return translateAwsError(e, 'DynamoDB UpdateItem (end child)');
    }
  }

  /**
   * A refused release: finishes a wake a release died before, else reports the child as it is;
   * a later job that took the id is nothing to do for this edge (no job: no wake, no send).
   */
  private async refused(item: Item | undefined, now: number, incarnation: string | undefined): Promise<EdgeRelease> {
    if (!item) return { kind: 'refused' };
    const job = fromItem(item);
    if (otherIncarnation(job, incarnation)) return { kind: 'refused' };
    if (job.state === 'waiting' && job.pendingParents === 0) return this.wake(job, now);
    return { kind: 'refused', job };
  }

  /** The second write of the last release: `queued`, due at max(runAt, now); that incarnation only. */
  private async wake(current: Job, now: number): Promise<EdgeRelease> {
    const child = current.id;
    const runAt = Math.max(Date.parse(current.runAt), now);
    const same = createdAtIs(current.createdAt);
    try {
      const out = await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: keyOf(keys.job(child)),
          UpdateExpression: 'SET #state = :queued, runAt = :runAt, updatedAt = :now REMOVE pendingParents, rel',
          ConditionExpression: `#state = :waiting AND pendingParents = :zero${same.condition}`,
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: {
            ':queued': S('queued'),
            ':waiting': S('waiting'),
            ':zero': N(0),
            ':runAt': S(iso(runAt)),
            ':now': S(iso(now)),
            ...same.values,
          },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { kind: 'ready', job: fromItem(out.Attributes ?? {}) };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        const found = error.Item ? fromItem(error.Item) : undefined;
        return { kind: 'refused', ...(found && found.createdAt === current.createdAt ? { job: found } : {}) };
      }
      return translateAwsError(error, 'DynamoDB UpdateItem (wake child)');
    }
  }

  async markReleased({ parent, count }: { parent: string; count: number }): Promise<void> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: keyOf(keys.job(parent)),
          UpdateExpression: 'SET childrenReleased = :n',
          ConditionExpression:
            'attribute_exists(pk) AND (attribute_not_exists(childrenReleased) OR childrenReleased < :n)',
          ExpressionAttributeValues: { ':n': N(count) },
        }),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return;
      translateAwsError(error, 'DynamoDB UpdateItem (children released)');
    }
  }

  async putFlow(flow: FlowRecord & { expiresAt: number }): Promise<void> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: {
            ...keyOf(flowKey(flow.id)),
            createdAt: S(flow.createdAt),
            nodes: S(JSON.stringify(flow.nodes)),
            expiresAt: N(flow.expiresAt),
          },
        }),
      );
    } catch (error) {
      translateAwsError(error, 'DynamoDB PutItem (flow)');
    }
  }

  async flow(id: string): Promise<FlowRecord | undefined> {
    try {
      const out = await this.client.send(
        new GetItemCommand({ TableName: this.tableName, Key: keyOf(flowKey(id)), ConsistentRead: true }),
      );
      if (!out.Item?.nodes?.S || !out.Item.createdAt?.S) return undefined;
      return { id, createdAt: out.Item.createdAt.S, nodes: JSON.parse(out.Item.nodes.S) as FlowRecord['nodes'] };
    } catch (error) {
      return translateAwsError(error, 'DynamoDB GetItem (flow)');
    }
  }

  async jobs(ids: readonly string[]): Promise<Map<string, Job>> {
    const items = await this.batchGet([...new Set(ids)].map((id) => keys.job(id)));
    const out = new Map<string, Job>();
    for (const item of items.values()) {
      const job = fromItem(item);
      out.set(job.id, job);
    }
    return out;
  }

  /** Items of `pks` by key, strongly consistent, 100 keys per BatchGetItem, unprocessed keys retried. */
  private async batchGet(pks: readonly string[]): Promise<Map<string, Item>> {
    const found = new Map<string, Item>();
    for (let start = 0; start < pks.length; start += 100) {
      let pending: Item[] = pks.slice(start, start + 100).map((pk) => keyOf(pk));
      for (let round = 0; pending.length > 0; round++) {
        if (round > 0) await new Promise((r) => setTimeout(r, Math.min(1000, 25 * 2 ** round)));
        if (round > 8) throw new Error(`DynamoDB BatchGetItem left ${pending.length} keys unprocessed`);
        try {
          const out = await this.client.send(
            new BatchGetItemCommand({ RequestItems: { [this.tableName]: { Keys: pending, ConsistentRead: true } } }),
          );
          for (const item of out.Responses?.[this.tableName] ?? []) {
            const pk = item.pk?.S;
            if (pk !== undefined) found.set(pk, item);
          }
          pending = (out.UnprocessedKeys?.[this.tableName]?.Keys ?? []) as Item[];
        } catch (error) {
          translateAwsError(error, 'DynamoDB BatchGetItem (job graph)');
        }
      }
    }
    return found;
  }
}
