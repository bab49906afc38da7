/**
 * Workflows in the system chaos run: jobs of one type (`sys-wf`) that record durable steps, sleep,
 * wait for a signal, and read their parents, beside the run's other jobs and under its faults.
 *
 * - **Signals at every moment of a wait.** A signal is sent before the job waits (it is in the
 *   inbox when the wait begins), while it waits (it wakes the job), in the last second of a wait
 *   that is waited out inside the attempt, and after the wait's deadline (its answer must say
 *   `late`). Other waits get no signal and time out, some hours later on the driven clock.
 * - **The API killed between two of its writes.** A planned call dies at a chosen write (the call
 *   never returns and nothing after it runs, as a Lambda killed mid-request): a signal's inbox
 *   write and its outcome, its outcome and the wake, the wake and the message; an enqueue's create
 *   and its registration with its parent; a flow's first level and its second (the flow is then
 *   sent again, or not). Its caller gets no answer and does not retry: the system alone must
 *   finish what the call began.
 * - **Ids reused after retention.** Once the driven clock is past the first jobs' retention, a
 *   second round reuses their ids, with steps, signals and parents of its own (a parent id gets
 *   another child, a child id another parent).
 *
 * Every job carries a nonce naming its incarnation; its steps return it, its signals carry it, and
 * its parents' results carry theirs. So a job that reads an entry of another incarnation of its id
 * (a step result, a sleep already over, a signal, a parent) is seen. The checks are at the end of
 * this file: invariants 14 to 16 of system-checks.ts.
 */
import { z } from 'zod';
import { createClient, OrreryApiError, type OrreryClient } from '../../shared/client/index';
import type { Clock } from '../../shared/core/clock';
import { DUE_GRACE_MS, jobDueAt, SIGNAL_LOOK_MS } from '../../shared/core/due';
import type { Job } from '../../shared/core/job';
import { defineJobType } from '../../shared/core/job-type';
import { defineJob } from '../../shared/runtime/define-job';
import type { JobContext, JobDefinition } from '../../shared/runtime/job-definition';
import { Suspension } from '../../shared/runtime/workflow';
import type { CallInfo, FaultInjector } from '../support/faults';
import type { ProbeTracker } from '../support/probes';

export const WORKFLOW_TYPE = 'sys-wf';
/** The one signal name the workflows wait for (a reused id waits for the same name again). */
export const SIGNAL_NAME = 'go';

/** When a workflow's signal is sent, relative to its wait. */
export type SignalTiming =
  /** Right after the enqueue is acknowledged; the job is delayed a few seconds, so it is in the inbox first. */
  | 'before'
  /** Once the handler reached its wait (a timeout of hours): it wakes the job. */
  | 'during'
  /** A wait of a second or less, waited out inside the attempt: sent at any point of it or just after. */
  | 'last-second'
  /** Once the wait returned its timeout (the job then sleeps on): the answer must say `late`. */
  | 'after'
  /** No signal: the wait times out, hours later on the driven clock. */
  | 'none';

/** Where a planned API call dies (see the file's comment). */
export type ApiKill =
  | 'signal-after-inbox'
  | 'signal-after-outcome'
  | 'signal-after-wake'
  | 'enqueue-after-create'
  | 'flow-between-levels';

export const API_KILLS: readonly ApiKill[] = [
  'signal-after-inbox',
  'signal-after-outcome',
  'signal-after-wake',
  'enqueue-after-create',
  'flow-between-levels',
];

const workflowPayload = z
  .object({
    /** Names this incarnation: what its steps return, its signal carries, its children expect. */
    nonce: z.string().min(1).max(40),
    /** Durable steps `s0`… run first. */
    steps: z.int().min(0).max(5),
    /** The parents it reads (`ctx.parents()`): id → that parent's nonce. */
    parents: z.record(z.string(), z.string()).optional(),
    /** A sleep (`nap`) after the steps. */
    sleepMs: z.int().min(0).optional(),
    /** A wait for {@link SIGNAL_NAME} with this timeout, after the sleep. */
    waitMs: z.int().min(1).optional(),
    /** A sleep (`after`) after the wait. */
    afterMs: z.int().min(0).optional(),
  })
  .strict();
export type WorkflowPayload = z.output<typeof workflowPayload>;

/** The payload of a workflow's signal: its target's nonce and a token of its own. */
interface SignalPayload {
  nonce: string;
  token: string;
}

/** One planned workflow job (one incarnation of its id). */
export interface PlannedWorkflow {
  id: string;
  /** 1: the first jobs of these ids; 2: their ids reused after retention. */
  round: 1 | 2;
  /** Which of the plan's kinds it belongs to (for the report). */
  kind: string;
  payload: WorkflowPayload;
  signal: SignalTiming;
  /** Its signal's payload token (unique per planned signal). */
  token: string;
  /** The API call that creates it or sends its signal dies at this write. */
  kill?: ApiKill;
  /** `single`: alone; `child`: alone with `dependsOn` its payload's parents, once they are acknowledged; `flow`: in {@link flow}. */
  via: 'single' | 'child' | 'flow';
  /** The flow it is created in, with its parents; `replay`: the flow is sent again after its call died. */
  flow?: { id: string; replay: boolean };
  delaySeconds?: number;
}

const MIN = 60_000;
const HOUR = 60 * MIN;

/**
 * Kinds of a round-1 unit, in turn, so that a plan of at least {@link WORKFLOW_KINDS} units has
 * each of them (`units` of 2 × this have each twice).
 */
const KINDS = [
  'signal-before',
  'signal-during',
  'signal-last-second',
  'signal-after',
  'timeout',
  'kill-signal-after-inbox',
  'kill-signal-after-outcome',
  'kill-signal-after-wake',
  'kill-enqueue-after-create',
  'kill-flow-replayed',
  'kill-flow-abandoned',
  'parent-child',
] as const;
export const WORKFLOW_KINDS = KINDS.length;

/**
 * Draws the first round: `units` units (a job, or a parent and its child), of each kind in turn.
 *
 * @example
 * const round1 = planWorkflows(24, seeded(42));
 */
export function planWorkflows(units: number, random: () => number): PlannedWorkflow[] {
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const tag = () => Math.floor(random() * 1e9).toString(36);
  const jobs: PlannedWorkflow[] = [];
  const steps = () => int(1, 3);
  const shortSleep = () => (random() < 0.5 ? { sleepMs: int(1500, 4000) } : {});
  for (let u = 0; u < units; u++) {
    const kind = KINDS[u % KINDS.length] ?? 'signal-before';
    const base = `wf-${u.toString().padStart(4, '0')}`;
    const job = (suffix: string, payload: Omit<WorkflowPayload, 'nonce'>, rest: Partial<PlannedWorkflow> = {}) => {
      const planned: PlannedWorkflow = {
        id: `${base}-${suffix}-${tag()}`,
        round: 1,
        kind,
        payload: { nonce: `1-${tag()}`, ...payload },
        signal: 'none',
        token: `t-${tag()}`,
        via: 'single',
        ...rest,
      };
      jobs.push(planned);
      return planned;
    };
    const during = { steps: steps(), ...shortSleep(), waitMs: int(2 * HOUR, 3 * HOUR) };
    if (kind === 'signal-before') {
      job(
        'w',
        {
          steps: steps(),
          ...(random() < 0.5 ? { sleepMs: int(20 * MIN, 2 * HOUR) } : {}),
          waitMs: int(2 * HOUR, 3 * HOUR),
        },
        {
          signal: 'before',
          delaySeconds: int(3, 8),
        },
      );
    } else if (kind === 'signal-during') {
      job('w', during, { signal: 'during' });
    } else if (kind === 'signal-last-second') {
      job('w', { steps: steps(), ...shortSleep(), waitMs: int(400, 1000) }, { signal: 'last-second' });
    } else if (kind === 'signal-after') {
      job('w', { steps: steps(), ...shortSleep(), waitMs: 300, afterMs: int(20 * MIN, 40 * MIN) }, { signal: 'after' });
    } else if (kind === 'timeout') {
      job('w', { steps: steps(), ...shortSleep(), waitMs: int(30 * MIN, 3 * HOUR) });
    } else if (kind.startsWith('kill-signal-')) {
      job('w', during, { signal: 'during', kill: kind.slice('kill-'.length) as ApiKill });
    } else if (kind === 'kill-enqueue-after-create' || kind === 'parent-child') {
      // the parent is still running or sleeping when its child registers with it
      const parent = job('p', {
        steps: steps(),
        sleepMs: kind === 'parent-child' ? int(1500, 4000) : int(30 * MIN, 90 * MIN),
      });
      job(
        'c',
        { steps: steps(), parents: { [parent.id]: parent.payload.nonce } },
        { via: 'child', ...(kind === 'parent-child' ? {} : { kill: 'enqueue-after-create' as const }) },
      );
    } else {
      const flow = { id: `${base}-flow-${tag()}`, replay: kind === 'kill-flow-replayed' };
      const parent = job('a', { steps: steps(), ...shortSleep() }, { via: 'flow', flow, kill: 'flow-between-levels' });
      job('b', { steps: steps(), parents: { [parent.id]: parent.payload.nonce } }, { via: 'flow', flow });
    }
  }
  return jobs;
}

/**
 * The second round: the ids of round 1's signal and parent-child jobs again, as new jobs once the
 * first are past their retention. Each gets a new nonce, new steps, and a signal sent before,
 * during or in the last second of its wait; each child gets another parent than before (the
 * parent of the next pair), so that an old registry or parents item would show.
 */
export function planReuse(round1: readonly PlannedWorkflow[], random: () => number): PlannedWorkflow[] {
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const tag = () => Math.floor(random() * 1e9).toString(36);
  // long enough to tell a sleep of the old job (over at once) from its own, across skewed clocks
  const sleep = () => ({ sleepMs: int(5000, 8000) });
  const timings = ['before', 'during', 'last-second'] as const;
  const again = (old: PlannedWorkflow, payload: Omit<WorkflowPayload, 'nonce'>, rest: Partial<PlannedWorkflow>) => ({
    id: old.id,
    round: 2 as const,
    kind: `reused-${old.kind}`,
    payload: { nonce: `2-${tag()}`, ...payload },
    signal: 'none' as SignalTiming,
    token: `t-${tag()}`,
    via: 'single' as const,
    ...rest,
  });
  const out: PlannedWorkflow[] = [];
  const singles = round1.filter((j) => ['signal-before', 'signal-during', 'signal-last-second'].includes(j.kind));
  singles.forEach((old, i) => {
    const signal = timings[i % timings.length] ?? 'before';
    out.push(
      again(
        old,
        { steps: int(1, 3), ...sleep(), waitMs: signal === 'last-second' ? int(400, 1000) : int(2 * HOUR, 3 * HOUR) },
        { signal, ...(signal === 'before' ? { delaySeconds: int(3, 8) } : {}) },
      ),
    );
  });
  const pairs = round1.filter((j) => j.kind === 'parent-child');
  const parents = pairs.filter((j) => j.via === 'single');
  const children = pairs.filter((j) => j.via === 'child');
  const newParents = parents.map((old) => again(old, { steps: int(1, 3), ...sleep() }, {}));
  out.push(...newParents);
  children.forEach((old, i) => {
    const parent = newParents[(i + 1) % newParents.length];
    if (!parent) return;
    out.push(again(old, { steps: int(1, 3), parents: { [parent.id]: parent.payload.nonce } }, { via: 'child' }));
  });
  return out;
}

/** What one incarnation's handler saw (driven times, unskewed). */
export interface IncarnationRecord {
  id: string;
  nonce: string;
  executions: number;
  /** Driven time of its first handler start. */
  firstStart?: number;
  /** Reads of entries that were not this incarnation's (checked by invariant 14). */
  foreign: string[];
  sleep?: { reached: number; ms: number; returned?: number };
  wait?: { reached: number; realReached: number; timeoutMs: number; returned?: number; got?: SignalPayload | null };
}

/** What became of a planned signal. */
export interface SignalRecord {
  /** `answered`: a 2xx; `killed`: its call died at the planned write; `refused`: a 4xx. */
  outcome: 'answered' | 'killed' | 'refused' | 'gave-up' | 'not-sent';
  /** Driven time of its first send. */
  sentAt?: number;
  late?: boolean;
  resumed?: boolean;
  /** The code of a refusal. */
  code?: string;
}

/** Every incarnation's record, and the handler that writes them. */
export class WorkflowRecords {
  readonly incarnations = new Map<string, IncarnationRecord>();

  of(id: string, nonce: string): IncarnationRecord {
    const key = `${id}|${nonce}`;
    let record = this.incarnations.get(key);
    if (!record) {
      record = { id, nonce, executions: 0, foreign: [] };
      this.incarnations.set(key, record);
    }
    return record;
  }

  get(id: string, nonce: string): IncarnationRecord | undefined {
    return this.incarnations.get(`${id}|${nonce}`);
  }

  /**
   * The workflow type: steps, parents, sleep, wait, sleep, each recorded against `driven`. Its
   * executions go to `tracker` too, so that invariant 2 (no two at once) covers them.
   */
  definition(tracker: ProbeTracker, driven: Clock, timeoutMs: number): JobDefinition {
    const spec = defineJobType({
      type: WORKFLOW_TYPE,
      payload: workflowPayload,
      timeoutMs,
      // the run's random worker faults may fail a few attempts (no escape hits a final write)
      retry: { maxAttempts: 8, backoff: { kind: 'constant', delayMs: 300 } },
    });
    const run = async (payload: WorkflowPayload, ctx: JobContext) => {
      const record = this.of(ctx.jobId, payload.nonce);
      const execution = tracker.start(ctx.jobId, ctx.attempt);
      record.executions += 1;
      record.firstStart ??= driven.now();
      try {
        for (let i = 0; i < payload.steps; i++) {
          const value = await ctx.step(`s${i}`, async () => ({ nonce: payload.nonce }));
          if (value?.nonce !== payload.nonce) record.foreign.push(`step s${i} returned ${JSON.stringify(value)}`);
        }
        if (payload.parents) {
          const parents = await ctx.parents();
          const want = Object.keys(payload.parents).sort();
          const got = Object.keys(parents).sort();
          if (want.join() !== got.join()) record.foreign.push(`parents ${got.join(',')} instead of ${want.join(',')}`);
          for (const [id, nonce] of Object.entries(payload.parents)) {
            const result = parents[id]?.result as { nonce?: string } | null | undefined;
            if (result?.nonce !== nonce)
              record.foreign.push(`parent ${id} gave ${JSON.stringify(result)}, not nonce ${nonce}`);
          }
        }
        if (payload.sleepMs !== undefined) {
          record.sleep ??= { reached: driven.now(), ms: payload.sleepMs };
          await ctx.sleep('nap', payload.sleepMs);
          record.sleep.returned ??= driven.now();
        }
        let got: SignalPayload | null = null;
        if (payload.waitMs !== undefined) {
          record.wait ??= { reached: driven.now(), realReached: Date.now(), timeoutMs: payload.waitMs };
          got = await ctx.waitForSignal<SignalPayload>(SIGNAL_NAME, { timeout: payload.waitMs });
          if (record.wait.returned === undefined) {
            record.wait.returned = driven.now();
            record.wait.got = got;
          } else if (JSON.stringify(got) !== JSON.stringify(record.wait.got)) {
            record.foreign.push(`the wait returned ${JSON.stringify(got)} after ${JSON.stringify(record.wait.got)}`);
          }
          if (got !== null && got.nonce !== payload.nonce)
            record.foreign.push(`the wait returned ${JSON.stringify(got)}`);
        }
        if (payload.afterMs !== undefined) await ctx.sleep('after', payload.afterMs);
        tracker.end(execution, 'completed');
        return { nonce: payload.nonce, got };
      } catch (error) {
        tracker.end(execution, error instanceof Suspension || ctx.signal.aborted ? 'aborted' : 'failed');
        throw error;
      }
    };
    return defineJob(spec, run) as unknown as JobDefinition;
  }
}

/** Counts of what the workflow actors did. */
export interface WorkflowActorStats {
  planned: number;
  acknowledged: number;
  notAcknowledged: number;
  signals: Record<string, number>;
  /** Planned kills whose call died at its write, by kind. */
  kills: Record<string, number>;
  /** The call each kill died at: `<kill> <command> <key or job>`. */
  killedAt: string[];
  /** Kills that did not reach their write (an earlier fault ended the call first) and were tried again. */
  killRetries: number;
  flowReplays: number;
  /** Waits of the signal actors for the handler (real ms): the longest, and how many ran out. */
  longestWaitMs: number;
  waitsRunOut: number;
}

/** Stats of actors that have done nothing yet. */
export function noWorkflowStats(): WorkflowActorStats {
  return {
    planned: 0,
    acknowledged: 0,
    notAcknowledged: 0,
    signals: {},
    kills: {},
    killedAt: [],
    killRetries: 0,
    flowReplays: 0,
    longestWaitMs: 0,
    waitsRunOut: 0,
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** How long a signal actor waits at most for the handler to reach (or leave) its wait. */
const HANDLER_WAIT_MS = 60_000;
/** Tries of one call that got no answer, a 5xx or a 429. */
const TRIES = 8;
/** See {@link WorkflowActors.dying}. */
const DYING_TIMEOUT_MS = 35_000;

/** Whether `input` names the item `job#<id>` or one of the items `job#<id>#…`. */
function touches(input: Record<string, unknown>, id: string): boolean {
  const text = JSON.stringify(input);
  return text.includes(`"job#${id}"`) || text.includes(`"job#${id}#`);
}
const READS = new Set(['GetItem', 'BatchGetItem', 'Query', 'Scan', 'TransactGetItems']);

/** The call of a planned kill: which of the API's calls dies. */
export function killMatcher(kill: ApiKill, id: string): (call: CallInfo) => boolean {
  switch (kill) {
    case 'signal-after-inbox':
      // the outcome's record, the write after the inbox's
      return (c) =>
        c.service === 'dynamodb' &&
        !READS.has(c.command) &&
        touches(c.input, id) &&
        JSON.stringify(c.input).includes('#journal"');
    case 'signal-after-outcome':
      // the wake: the job's status item
      return (c) =>
        c.service === 'dynamodb' && c.command === 'UpdateItem' && JSON.stringify(c.input).includes(`"job#${id}"`);
    case 'signal-after-wake':
      return (c) => c.service === 'sqs' && c.command === 'SendMessage' && c.jobId === id;
    case 'enqueue-after-create':
      // `id` is the parent: the child's registration with it (`ADD childCount` on its status
      // item), which only the child's request makes, after the child's create. Any other write on
      // the parent (its own create, retried by its caller; a cancel) is another request's.
      return (c) =>
        c.service === 'dynamodb' &&
        c.command === 'UpdateItem' &&
        touches(c.input, id) &&
        String(c.input.UpdateExpression ?? '').includes('childCount');
    case 'flow-between-levels':
      // `id` is the flow's second level: its first write
      return (c) => c.service === 'dynamodb' && !READS.has(c.command) && touches(c.input, id);
  }
}

/**
 * The callers of the workflows: they enqueue them (alone, as children, in flows), send their
 * signals at the planned moment, and make the planned calls die.
 */
export class WorkflowActors {
  readonly stats: WorkflowActorStats = noWorkflowStats();
  /** What became of each planned signal, by `<id>|<nonce>`. */
  readonly signals = new Map<string, SignalRecord>();
  /** Jobs whose creation died at its planned write (`<id>|<nonce>`). */
  readonly killedCreates = new Set<string>();
  /** Jobs whose enqueue or flow was acknowledged (`<id>|<nonce>`). */
  readonly acknowledged = new Set<string>();
  /** Flows whose call died and that were not sent again: their second level was never written. */
  readonly abandonedFlows = new Set<string>();
  private pending = 0;
  private readonly client: OrreryClient;
  /**
   * A client whose call dies at its planned write: no retry, and a timeout past the API function's
   * own (30 s: the Function URL stand-in answers 502 then). A call given up on sooner would go on
   * in the API after the kill was disarmed, beside the next try: the next try's kill could then
   * fire in the earlier call, and the next try write what the kill was to stop.
   */
  private readonly dying: OrreryClient;

  constructor(
    url: string,
    private readonly records: WorkflowRecords,
    private readonly apiFaults: FaultInjector,
    private readonly driven: Clock,
    private readonly random: () => number,
    options: { clientTimeoutMs: number },
  ) {
    this.client = createClient({
      url,
      timeoutMs: options.clientTimeoutMs * 4,
      retry: { retries: 2, baseDelayMs: 50, maxDelayMs: 500 },
    });
    this.dying = createClient({ url, timeoutMs: DYING_TIMEOUT_MS, retry: { retries: 0 } });
  }

  /** Actions still running. */
  get busy(): number {
    return this.pending;
  }

  /** Creates every job of `jobs` and does what its plan says, all at once; resolves when every action is done. */
  async produce(jobs: readonly PlannedWorkflow[]): Promise<void> {
    this.stats.planned += jobs.length;
    const byFlow = new Map<string, PlannedWorkflow[]>();
    const acked = new Map<string, Promise<boolean>>();
    const units: Promise<void>[] = [];
    for (const job of jobs) {
      if (job.via === 'flow' && job.flow) {
        byFlow.set(job.flow.id, [...(byFlow.get(job.flow.id) ?? []), job]);
        continue;
      }
      if (job.via === 'child') continue;
      const done = this.track(() => this.enqueue(job));
      acked.set(job.id, done);
      units.push(done.then((ok) => (ok ? this.signal(job) : undefined)));
    }
    for (const job of jobs.filter((j) => j.via === 'child')) {
      units.push(
        this.track(async () => {
          const parents = Object.keys(job.payload.parents ?? {});
          const ready = await Promise.all(parents.map((p) => acked.get(p) ?? Promise.resolve(true)));
          if (ready.every(Boolean)) await this.enqueue(job);
        }),
      );
    }
    for (const flow of byFlow.values()) units.push(this.track(() => this.createFlow(flow)));
    await Promise.all(units);
  }

  private async track<T>(fn: () => Promise<T>): Promise<T> {
    this.pending += 1;
    try {
      return await fn();
    } finally {
      this.pending -= 1;
    }
  }

  /**
   * Runs `call` with the kill's write armed to die: only that call's write (`times: 1`, disarmed
   * once the call ended), tried again (with the same request, as a caller would) while an earlier
   * fault ended it before that write. True when it died there.
   */
  private async dieAt(kill: ApiKill, subject: string, call: () => Promise<unknown>): Promise<boolean> {
    for (let tries = 0; tries < 3; tries++) {
      let armed = true;
      let fired = false;
      const match = killMatcher(kill, subject);
      this.apiFaults.script({
        kind: 'timeout',
        phase: 'before',
        hang: true,
        match: (c) => {
          if (!armed || !match(c)) return false;
          armed = false;
          fired = true;
          const key = (c.input.Key as { pk?: { S?: string } } | undefined)?.pk?.S ?? c.jobId ?? '';
          this.stats.killedAt.push(`${kill} ${c.command} ${key}`);
          return true;
        },
      });
      await call().catch(() => undefined);
      armed = false;
      if (fired) {
        this.stats.kills[kill] = (this.stats.kills[kill] ?? 0) + 1;
        return true;
      }
      this.stats.killRetries += 1;
      await sleep(200);
    }
    return false;
  }

  /** Enqueues `job` (retried with the same id until answered), or lets its planned call die. */
  private async enqueue(job: PlannedWorkflow): Promise<boolean> {
    const options = {
      id: job.id,
      ...(job.delaySeconds ? { delaySeconds: job.delaySeconds } : {}),
      ...(job.via === 'child' ? { dependsOn: Object.keys(job.payload.parents ?? {}) } : {}),
    };
    if (job.kill === 'enqueue-after-create') {
      const parent = Object.keys(job.payload.parents ?? {})[0] ?? '';
      const died = await this.dieAt(job.kill, parent, () => this.dying.enqueue(WORKFLOW_TYPE, job.payload, options));
      if (died) this.killedCreates.add(`${job.id}|${job.payload.nonce}`);
      this.stats.notAcknowledged += 1;
      return false;
    }
    const answer = await this.retried(() => this.client.enqueue(WORKFLOW_TYPE, job.payload, options));
    const ok = answer !== false && !(answer instanceof OrreryApiError);
    if (ok) {
      this.stats.acknowledged += 1;
      this.acknowledged.add(`${job.id}|${job.payload.nonce}`);
    } else this.stats.notAcknowledged += 1;
    return ok;
  }

  /** A flow of a parent and its child whose call dies between its two levels; then sent again, or not. */
  private async createFlow(jobs: PlannedWorkflow[]): Promise<void> {
    const flow = jobs[0]?.flow;
    if (!flow) return;
    const items = jobs.map((j) => ({
      id: j.id,
      type: WORKFLOW_TYPE,
      payload: j.payload,
      ...(j.payload.parents ? { dependsOn: Object.keys(j.payload.parents) } : {}),
    }));
    const child = jobs.find((j) => j.payload.parents !== undefined);
    if (child && jobs.some((j) => j.kill === 'flow-between-levels')) {
      const died = await this.dieAt('flow-between-levels', child.id, () =>
        this.dying.createFlow(items, { id: flow.id }),
      );
      if (died && !flow.replay) {
        this.abandonedFlows.add(flow.id);
        this.stats.notAcknowledged += jobs.length;
        return;
      }
      await sleep(Math.floor(this.random() * 3000));
      this.stats.flowReplays += 1;
    }
    const answer = await this.retried(() => this.client.createFlow(items, { id: flow.id }));
    if (answer !== false && !(answer instanceof OrreryApiError)) {
      this.stats.acknowledged += jobs.length;
      for (const j of jobs) this.acknowledged.add(`${j.id}|${j.payload.nonce}`);
    } else this.stats.notAcknowledged += jobs.length;
  }

  /** Waits (bounded) until `ready` holds; false when it ran out. */
  private async until(ready: () => boolean): Promise<boolean> {
    const began = Date.now();
    while (!ready()) {
      if (Date.now() - began > HANDLER_WAIT_MS) {
        this.stats.waitsRunOut += 1;
        return false;
      }
      await sleep(50);
    }
    this.stats.longestWaitMs = Math.max(this.stats.longestWaitMs, Date.now() - began);
    return true;
  }

  /** Sends the job's signal at its planned moment. */
  private async signal(job: PlannedWorkflow): Promise<void> {
    if (job.signal === 'none') return;
    const key = `${job.id}|${job.payload.nonce}`;
    const record: SignalRecord = { outcome: 'not-sent' };
    this.signals.set(key, record);
    const incarnation = () => this.records.get(job.id, job.payload.nonce);
    if (job.signal === 'during') {
      if (!(await this.until(() => incarnation()?.wait !== undefined))) return;
      if (job.kill === 'signal-after-wake') {
        // its message is sent only when the signal wakes the job: wait until it waits
        const began = Date.now();
        for (;;) {
          const view = await this.client.get(job.id).catch(() => undefined);
          if (view?.state === 'waiting' || Date.now() - began > HANDLER_WAIT_MS) break;
          await sleep(150);
        }
      } else {
        await sleep(Math.floor(this.random() * 1500));
      }
    }
    if (job.signal === 'last-second') {
      if (!(await this.until(() => incarnation()?.wait !== undefined))) return;
      const wait = incarnation()?.wait;
      const spent = Date.now() - (wait?.realReached ?? Date.now());
      await sleep(Math.max(0, Math.floor(this.random() * ((wait?.timeoutMs ?? 0) + 300)) - spent));
    }
    if (job.signal === 'after') {
      if (!(await this.until(() => incarnation()?.wait?.returned !== undefined))) return;
      await sleep(Math.floor(this.random() * 500));
    }
    const payload: SignalPayload = { nonce: job.payload.nonce, token: job.token };
    record.sentAt = this.driven.now();
    this.stats.signals[job.signal] = (this.stats.signals[job.signal] ?? 0) + 1;
    if (job.kill?.startsWith('signal-')) {
      const died = await this.dieAt(job.kill, job.id, () =>
        this.dying.signal(job.id, SIGNAL_NAME, payload).then((receipt) => {
          record.outcome = 'answered';
          record.late = receipt.late;
          record.resumed = receipt.resumed;
        }),
      );
      if (died) record.outcome = 'killed';
      return;
    }
    const answer = await this.retried(() => this.client.signal(job.id, SIGNAL_NAME, payload));
    if (answer instanceof OrreryApiError) {
      record.outcome = 'refused';
      record.code = answer.code;
    } else if (answer === false) {
      record.outcome = 'gave-up';
    } else {
      record.outcome = 'answered';
      record.late = answer.late;
      record.resumed = answer.resumed;
    }
  }

  /**
   * Runs `call` until it is answered: its result (`true` for an enqueue), the 4xx error that
   * refused it, or `false` after {@link TRIES} tries without an answer.
   */
  private async retried<T>(call: () => Promise<T>): Promise<T | OrreryApiError | false> {
    for (let tries = 0; tries < TRIES; tries++) {
      try {
        return await call();
      } catch (error) {
        if (error instanceof OrreryApiError && error.status >= 400 && error.status < 500 && error.status !== 429) {
          return error;
        }
        await sleep(200 + tries * 300);
      }
    }
    return false;
  }
}

/** One cycle of the run: its jump on the driven clock, and the driven time its settle ended. */
export interface CycleRecord {
  from: number;
  to: number;
  settledAt: number;
}

/** What {@link checkWorkflows} needs. */
export interface WorkflowCheckInput {
  planned: readonly PlannedWorkflow[];
  records: WorkflowRecords;
  actors: Pick<WorkflowActors, 'signals' | 'killedCreates' | 'acknowledged' | 'abandonedFlows' | 'stats'>;
  /** The stored jobs at the end, and those of round 1 as they were before their ids were reused. */
  stored: Map<string, Job>;
  storedBeforeReuse: Map<string, Job>;
  cycles: readonly CycleRecord[];
  maxSkewMs: number;
  supervisorIntervalMs: number;
  /** Driven time at the end: a job not yet overdue then (by the due index's rule) is pending, not lost. */
  finalNow: number;
}

/** The invariants this file checks, by their number in system-checks.ts. */
export type WorkflowInvariant = 'parents' | 'identity' | 'signals' | 'resume';

/** Violations and counts of {@link checkWorkflows}. */
export interface WorkflowCheck {
  checked: Record<WorkflowInvariant, number>;
  violations: { invariant: WorkflowInvariant; subject: string; detail: string }[];
  exercised: Record<string, number>;
}

/**
 * The workflow invariants:
 * - `identity` (14): no job reads an entry written by another incarnation of its id: each step
 *   returns its own nonce, a wait returns only its own signal, a sleep lasts its length from the
 *   first time this incarnation reached it, the parents are its own, and no signal is refused as
 *   `signal_exists` (only one payload is ever sent per incarnation).
 * - `signals` (15): every signal accepted with a 2xx is returned by its wait, or was answered
 *   `late` and the wait returned its timeout; a signal whose call died after its inbox write is
 *   returned by its wait.
 * - `resume` (16): every waiting job resumes within its stated bound: a sleep or a timeout within
 *   {@link DUE_GRACE_MS}.queued of its end, a stored signal within {@link SIGNAL_LOOK_MS} of its
 *   inbox write (each plus the clocks' skew and a supervisor pass); on the driven clock, a bound
 *   that a jump passes must be met by the end of the cycle after the first jump from beyond it.
 *   And every workflow written runs to success (none is lost: an acknowledged job, a child whose
 *   enqueue died after its create, a flow's first level whose call died before the second).
 * - `parents` (13, with the plain jobs' flows): a child's first start comes after its parent
 *   ended, on clocks up to the skew apart.
 */
export function checkWorkflows(input: WorkflowCheckInput): WorkflowCheck {
  const checked: Record<WorkflowInvariant, number> = { parents: 0, identity: 0, signals: 0, resume: 0 };
  const violations: WorkflowCheck['violations'] = [];
  const violate = (invariant: WorkflowInvariant, subject: string, detail: string) =>
    violations.push({ invariant, subject, detail });
  const pass = input.supervisorIntervalMs + MIN;
  /** The latest driven time `t` is met by: the end of the first cycle that jumped from at or after it. */
  const resumeBy = (t: number) => input.cycles.find((c) => c.from >= t)?.settledAt;
  const at = (ms: number | undefined) => (ms === undefined ? 'never' : new Date(ms).toISOString());
  const round2 = new Set(input.planned.filter((j) => j.round === 2).map((j) => j.id));
  /** The stored job of `j`'s incarnation, if it was written. */
  const storedOf = (j: PlannedWorkflow) => {
    const job = j.round === 1 && round2.has(j.id) ? input.storedBeforeReuse.get(j.id) : input.stored.get(j.id);
    return (job?.payload as { nonce?: string } | undefined)?.nonce === j.payload.nonce ? job : undefined;
  };
  const byId = new Map(input.planned.map((j) => [`${j.id}|${j.payload.nonce}`, j]));
  const exercised = {
    wfIncarnations: 0,
    wfIdsReused: 0,
    wfStepsReplayed: 0,
    wfSleepsResumed: 0,
    wfWaitsTimedOut: 0,
    wfSignalsBefore: 0,
    wfSignalsDuring: 0,
    wfSignalsLastSecond: 0,
    wfSignalsAfter: 0,
    wfSignalsLate: 0,
    wfKilledSignalAfterInbox: input.actors.stats.kills['signal-after-inbox'] ?? 0,
    wfKilledSignalAfterOutcome: input.actors.stats.kills['signal-after-outcome'] ?? 0,
    wfKilledSignalAfterWake: input.actors.stats.kills['signal-after-wake'] ?? 0,
    wfKilledEnqueueAfterCreate: input.actors.stats.kills['enqueue-after-create'] ?? 0,
    wfKilledFlowBetweenLevels: input.actors.stats.kills['flow-between-levels'] ?? 0,
    wfFlowsReplayed: input.actors.stats.flowReplays,
    wfFlowsAbandoned: input.actors.abandonedFlows.size,
  };

  for (const j of input.planned) {
    const key = `${j.id}|${j.payload.nonce}`;
    const record = input.records.get(j.id, j.payload.nonce);
    const job = storedOf(j);
    const signal = input.actors.signals.get(key);

    // 16: written → ends succeeded; acknowledged (or created by a call that died later) → written
    checked.resume += 1;
    const abandoned = j.flow !== undefined && input.actors.abandonedFlows.has(j.flow.id);
    const mustExist =
      input.actors.acknowledged.has(key) ||
      input.actors.killedCreates.has(key) ||
      (j.via === 'flow' && abandoned && j.payload.parents === undefined) ||
      (signal !== undefined && signal.outcome !== 'not-sent');
    if (!job) {
      if (mustExist) violate('resume', j.id, `round ${j.round} (${j.kind}): never written, or lost`);
    } else if (job.state !== 'succeeded' && !((jobDueAt(job) ?? Number.NEGATIVE_INFINITY) > input.finalNow)) {
      violate(
        'resume',
        j.id,
        `round ${j.round} (${j.kind}): ${job.state} at the end (attempts ${job.attempts}, resumes ${job.resumes ?? 0})`,
      );
    }
    if (abandoned && j.payload.parents !== undefined && job) {
      // a flow cut short before its second level: that level was never written
      violate('resume', j.id, `the second level of abandoned flow ${j.flow?.id} exists (${job.state})`);
    }
    if (!record) continue;
    exercised.wfIncarnations += 1;
    if (j.round === 2) exercised.wfIdsReused += 1;
    if (record.executions > 1) exercised.wfStepsReplayed += j.payload.steps;

    // 14: nothing of another incarnation
    // a sleep's end is set by one worker's clock and seen by another's: shorter sleeps tell nothing
    const tolerance = 2 * input.maxSkewMs + 100;
    const timedSleep = record.sleep !== undefined && record.sleep.ms > tolerance;
    checked.identity += j.payload.steps + (j.payload.parents ? 1 : 0) + (timedSleep ? 1 : 0) + (record.wait ? 1 : 0);
    for (const read of record.foreign) violate('identity', j.id, `round ${j.round} (${j.kind}): ${read}`);
    if (
      record.sleep?.returned !== undefined &&
      record.sleep.returned - record.sleep.reached < record.sleep.ms - tolerance
    ) {
      violate(
        'identity',
        j.id,
        `round ${j.round}: its sleep of ${record.sleep.ms} ms, first reached at ${at(record.sleep.reached)}, was over at ${at(record.sleep.returned)}`,
      );
    }
    if (signal?.outcome === 'refused' && signal.code === 'signal_exists') {
      violate('identity', j.id, `round ${j.round}: its only signal was refused as signal_exists`);
    }

    // 16: resumed within the bound
    if (record.sleep) {
      const bound = record.sleep.reached + record.sleep.ms + DUE_GRACE_MS.queued + input.maxSkewMs + pass;
      const by = resumeBy(bound);
      if (record.sleep.returned !== undefined) exercised.wfSleepsResumed += 1;
      if (by !== undefined && (record.sleep.returned ?? Number.POSITIVE_INFINITY) > by) {
        violate(
          'resume',
          j.id,
          `round ${j.round}: slept from ${at(record.sleep.reached)} for ${record.sleep.ms} ms; resumed ${at(record.sleep.returned)}, bound ${at(bound)} (met by ${at(by)})`,
        );
      }
    }
    if (record.wait) {
      const stored =
        signal?.sentAt !== undefined &&
        (signal.outcome === 'killed' || (signal.outcome === 'answered' && !signal.late));
      const deadline = record.wait.reached + record.wait.timeoutMs + DUE_GRACE_MS.queued + input.maxSkewMs + pass;
      const bound = stored
        ? Math.min(
            deadline,
            Math.max(signal?.sentAt ?? 0, record.wait.reached) + SIGNAL_LOOK_MS + input.maxSkewMs + pass,
          )
        : deadline;
      const by = resumeBy(bound);
      if (record.wait.returned !== undefined && record.wait.got === null) exercised.wfWaitsTimedOut += 1;
      if (by !== undefined && (record.wait.returned ?? Number.POSITIVE_INFINITY) > by) {
        violate(
          'resume',
          j.id,
          `round ${j.round}: waited from ${at(record.wait.reached)} (timeout ${record.wait.timeoutMs} ms${stored ? `, signal stored at ${at(signal?.sentAt)}` : ''}); resumed ${at(record.wait.returned)}, bound ${at(bound)} (met by ${at(by)})`,
        );
      }
    }

    // 15: a signal accepted is returned, or answered late
    if (signal && (signal.outcome === 'answered' || signal.outcome === 'killed')) {
      checked.signals += 1;
      const timing = j.signal === 'last-second' ? 'LastSecond' : `${j.signal[0]?.toUpperCase()}${j.signal.slice(1)}`;
      const field = `wfSignals${timing}` as keyof typeof exercised;
      if (field in exercised && signal.outcome === 'answered') exercised[field] += 1;
      if (signal.late) exercised.wfSignalsLate += 1;
      const got = record.wait?.got;
      const returned = record.wait?.returned !== undefined;
      const mine = got?.token === j.token;
      const problem =
        signal.outcome === 'killed' || !signal.late
          ? mine
            ? undefined
            : `${signal.outcome === 'killed' ? 'stored by a call that died' : `answered ${signal.resumed ? 'resumed' : 'not late'}`}, but its wait ${returned ? `returned ${JSON.stringify(got)}` : 'never returned'}`
          : returned && got === null
            ? undefined
            : `answered late, but its wait ${returned ? `returned ${JSON.stringify(got)}` : 'never returned'}`;
      if (problem) violate('signals', j.id, `round ${j.round} (${j.kind}): ${problem}`);
    }

    // 13: a child starts after its parents ended
    for (const parentId of Object.keys(j.payload.parents ?? {})) {
      if (record.firstStart === undefined) continue;
      checked.parents += 1;
      const parent = [...byId.values()].find((p) => p.id === parentId && p.round === j.round);
      const finished = parent ? storedOf(parent)?.finishedAt : undefined;
      const ended = finished === undefined ? undefined : Date.parse(finished);
      if (ended === undefined || record.firstStart < ended - input.maxSkewMs - 50) {
        violate(
          'parents',
          j.id,
          `round ${j.round}: started ${at(record.firstStart)}, its parent ${parentId} ended ${at(ended)}`,
        );
      }
    }
  }
  return { checked, violations, exercised };
}
