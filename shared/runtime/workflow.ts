/**
 * Durable steps, sleeps and signal waits for a handler (`ctx.step`, `ctx.sleep`,
 * `ctx.waitForSignal`), on the job's journal (see shared/core/journal.ts and docs/workflows.md).
 *
 * A handler is re-run from the top by every later attempt, and after every sleep or wait: each
 * step that was recorded gives back its recorded result without running again, so only the
 * steps not recorded yet run. A sleep or a wait that has to last ends the attempt: the call
 * throws a {@link Suspension} that the handler should let through (the worker suspends the job
 * even if the handler catches it), `ctx.signal` aborts with that Suspension as its reason, and
 * the worker waits for the handler to stop, as after a timeout, before the job waits in state
 * `waiting` with no Lambda running and no attempt spent. It resumes at its wake time, or when its
 * signal arrives.
 *
 * `ctx.emit` is a step that sends an event (through the {@link EventSender} the worker is given),
 * and `ctx.waitForEvent` is a signal wait under a reserved name (`event:<step>`) that first
 * registers in the match index and looks there for an event sent since the job was created
 * (shared/core/event-waits.ts).
 */

import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { z } from 'zod';
import {
  type BlobStore,
  blobKey,
  MAX_BLOB_BYTES,
  mustOffload,
  offload,
  refuseReferenceShape,
  resolveBlob,
} from '../core/blobs';
import type { Clock } from '../core/clock';
import {
  EVENT_SIGNAL_PREFIX,
  type EventWaits,
  eventSignalName,
  isEventSignal,
  matchKey,
  parseMatch,
  type SentEvent,
} from '../core/event-waits';
import { type EventDefinition, type EventSender, emitEventId } from '../core/events';
import {
  type InvokeOutcome,
  type InvokeStart,
  invokedChildId,
  invokeEnded,
  MAX_INVOKES_PER_WAIT,
} from '../core/invoke';
import type { Job, WakeWait } from '../core/job';
import type { DeclaresSignals, SignalSchemas } from '../core/job-type';
import {
  checkName,
  entryName,
  type InboxSignal,
  invokeFloorOf,
  JOURNAL_RETENTION_DAYS,
  type Journal,
  type JournalKind,
  type JournalScope,
  journalScopeOf,
  MAX_STEP_RESULT_BYTES,
  MAX_WAIT_MS,
  parseDuration,
  parseEntryName,
  type RecordedEntries,
  type SignalOutcome,
  storableValue,
  timedOutAt,
  wakeTime,
} from '../core/journal';
import { JOB_ID_PATTERN, jsonBytes } from '../core/limits';
import { type CallKind, callKeyOf, callKindOf, type Divergence, describeDivergence, ReplayTrail } from '../core/replay';
import { INVOKE_DEFAULT_MAX_ATTEMPTS, type InvokedChild } from '../dispatch/invoke';
import {
  InvokedJobFailedError,
  NondeterminismError,
  OrreryError,
  type PermanentError,
  SignalTimeoutError,
  StepUsageError,
  ValidationError,
} from '../errors';
import { untilAborted } from './until-aborted';

/** Waits this short are waited out in the attempt: ending it would cost more and gain nothing. */
export const IN_ATTEMPT_WAIT_MS = 1_000;

/** What `ctx.waitForSignal` does when its timeout passes first. */
export interface WaitForSignalOptions {
  /**
   * How long to wait: milliseconds, or a text such as `"15m"`, `"2h"`, `"7d"`; at most 366 days.
   * The deadline is fixed by the first call and kept across attempts.
   * @default "366d"
   */
  timeout?: number | string;
  /**
   * `null`: the call returns `null`; `throw`: it throws a `SignalTimeoutError` (the job fails).
   * @default "null"
   */
  onTimeout?: 'null' | 'throw';
}

/** `ctx.waitForEvent`'s options: what to match, and its timeout as a signal wait's. */
export interface WaitForEventOptions extends WaitForSignalOptions {
  /**
   * The one field of the event's data this job waits on, and its value:
   * `{ 'data.orderId': orderId }`. The path must be one of the event's `matchOn`.
   */
  match: Record<string, string | number | boolean>;
  /**
   * The wait's name in the job's journal, unique within a run. @default the event's name
   */
  step?: string;
}

/** An event a wait returns: its id, name and data. */
export interface ReceivedEvent<Data = unknown> {
  id: string;
  name: string;
  data: Data;
}

/** The data type of an event given as its definition (or `unknown` data for a name). */
export type EventDataOf<E> = E extends EventDefinition<infer S> ? z.output<S> : Record<string, unknown>;

/**
 * The signals of a context or a definition taken whatever its job type declares (the worker's
 * `JobDefinition`, a handler typed `JobContext`): its `waitForSignal` takes any name. It is `any`
 * so that a definition of a type with declared signals is such a definition too (a conditional
 * type such as {@link SignalWait} makes `JobContext<{ payment }>` and
 * `JobContext<SignalSchemas>` unrelated to the compiler).
 */
// biome-ignore lint/suspicious/noExplicitAny: the one `any`, for the variance reason above
export type AnySignals = any;

/** What `ctx.invoke` may set about the child it starts. */
export interface InvokeOptions {
  /**
   * The child's id: a job of that id that exists (same type and payload) is awaited, not started
   * again. @default `<parent id>.<name>` (or a hash of both when that is not a valid id)
   */
  id?: string;
  /** The child's attempts. @default 3 */
  maxAttempts?: number;
}

/** How the steps start a child and look at it (the worker builds it from its graph, store and queues). */
export interface Invoker {
  /** Starts the child once (a replay writes nothing new); throws when it cannot. */
  start(child: InvokedChild): Promise<void>;
  /** The child as stored, or undefined; calls made in one turn are read together, in pages. */
  look(id: string): Promise<Job | undefined>;
}

/** The durable part of a handler's context; `Signals` are its job type's (see {@link SignalWait}). */
export interface WorkflowSteps<Signals extends SignalSchemas = AnySignals> {
  /**
   * Runs `fn` once for the job, whatever happens later: its result (JSON, ≤ 64 KiB) is recorded
   * under `name`, and every later run of the handler gets the recorded result back instead of
   * running `fn` again. A step that throws records nothing: the error follows the job's retry
   * policy, and the next attempt runs the step again. Names are unique within a run.
   * Costs 1 write unit for a result up to about 900 bytes (1 per KB above). A later run reads the
   * whole journal once, at its first call that needs a recorded entry: one Query per 1 MB of
   * entries (1 read unit per 4 KB), not a read per step; the job's first run reads nothing.
   * @example
   * const charge = await ctx.step('charge', () => payments.charge(order.id, order.total));
   */
  step<T>(name: string, fn: () => Promise<T> | T): Promise<T>;
  /**
   * Sleeps for a duration (ms, or `"90s"`, `"15m"`, `"2h"`, `"7d"`) or until a moment (a Date, or
   * ISO 8601 text), at most 366 days ahead. A sleep longer than a second ends the attempt; the job
   * waits in state `waiting` and resumes afterwards (see the module comment).
   * @example
   * await ctx.sleep('cool-off', '2h');
   */
  sleep(name: string, duration: number | string | Date): Promise<void>;
  /**
   * Waits for the signal `name` (`POST /jobs/{id}/signals/{name}`) and returns its payload. A
   * signal sent before the wait is kept in the job's inbox and returned at once. Returns `null`
   * when the timeout passes first (or throws, with `onTimeout: 'throw'`). Whichever comes first is
   * recorded, and no signal is lost between them, even in the wait's last second: a send answered
   * `late: false` is returned by this wait, one answered `late: true` came after its timeout.
   *
   * When the job type declares `signals`, the name must be one of them and the payload has its
   * schema's type; without them, any name is taken and the payload is `unknown` (or `T`).
   * @example
   * // signals: { payment: z.object({ amount: z.number() }) } in the spec
   * const payment = await ctx.waitForSignal('payment', { timeout: '3d' }); // { amount: number } | null
   */
  waitForSignal: SignalWait<Signals>;
  /**
   * Sends the event `name` (or the event of a definition) with `data`, as `POST /events` does
   * (its schema, its subscribers' filters and payloads; one job per subscriber; the waits that
   * match it), once for the job: the send is a step named `emit:<step>` (default `emit:<name>`),
   * and the event's id is derived from the job and that name, so a replay does not send it again,
   * and an attempt that died between the send and its record sends the same event, which makes
   * nothing new. Data the event refuses fails the job (`StepUsageError`). Costs the event's jobs
   * (see docs/events.md) plus 1 write unit (the step).
   * @example
   * await ctx.emit(orderPlaced, { orderId: order.id, total: order.total });
   */
  emit<E extends string | EventDefinition>(
    event: E,
    data: EventDataOf<E>,
    options?: { step?: string },
  ): Promise<{ id: string }>;
  /**
   * Waits for an event whose data matches this job on one field, and returns it (`{ id, name,
   * data }`), or `null` when the timeout passes first (or throws, with `onTimeout: 'throw'`).
   * An event sent after the job was created is not lost, even when it came before the wait; one
   * sent before the job was created is not matched. The path must be in the event's `matchOn`.
   * It waits as a signal wait does, with no Lambda running; see docs/workflows.md for costs.
   * @example
   * const paid = await ctx.waitForEvent(orderPaid, { match: { 'data.orderId': order.id }, timeout: '3d' });
   */
  waitForEvent<E extends string | EventDefinition>(
    event: E,
    options: WaitForEventOptions,
  ): Promise<ReceivedEvent<EventDataOf<E>> | null>;
  /**
   * Starts a job of `type` with `payload` as this job's child, once per `name`, and returns its
   * result. The attempt ends while the child runs (no Lambda waits): the job waits in state
   * `waiting`, and the child's end makes it due again, as a job's parents do. A child that ends
   * failed, cancelled, expired or skipped makes the call throw an `InvokedJobFailedError`
   * (recorded: every replay throws the same). Invokes in one `Promise.all` end the attempt once,
   * and the job resumes once, after the last of them ended.
   * Costs, beyond the child's own job: 1 WU for its registry item, 2 journal entries (its start
   * and its end, 1 WU each up to ~900 bytes of result) and 2 writes of the release on the parent
   * (see docs/workflows.md "Invoke").
   * @example
   * const receipt = await ctx.invoke('charge', 'charge-card', { orderId });
   * const all = await Promise.all(items.map((item, i) => ctx.invoke(`ship-${i}`, 'ship', item)));
   */
  invoke<T = unknown>(name: string, type: string, payload: unknown, options?: InvokeOptions): Promise<T>;
  /**
   * Whether this run takes the code path of the change named `name`, as Temporal's `patched()`:
   * true for a run that reaches this point on code that has the call (a new run, or one whose
   * journal had not passed this point yet), false for a run whose journal already went past it
   * on code without it. The answer is kept: a run that got true records the name with its next
   * entry (in that entry's item: no write of its own), and gets true on every replay. Takes no
   * place in the run's order. Once no run that started before the change is left, drop the
   * false branch (keep the call until then). See docs/workflows.md, "Changing code safely".
   * @example
   * if (await ctx.patched('fraud-check')) await ctx.step('fraud-check', () => fraud.check(order));
   * await ctx.step('charge', () => payments.charge(order));
   */
  patched(name: string): Promise<boolean>;
}

/** `ctx.waitForSignal` of a job type that declares no signals: any name, the payload type is the caller's. */
export type UntypedSignalWait = <T = unknown>(name: string, options?: WaitForSignalOptions) => Promise<T | null>;

/** `ctx.waitForSignal` of a job type that declares its signals: one of their names, its payload's type. */
export type TypedSignalWait<Signals extends SignalSchemas> = <Name extends keyof Signals & string>(
  name: Name,
  options?: WaitForSignalOptions,
) => Promise<z.output<Signals[Name]> | null>;

/** `ctx.waitForSignal`, typed by the spec's `signals` when it declares them. */
export type SignalWait<Signals extends SignalSchemas = AnySignals> =
  DeclaresSignals<Signals> extends true ? TypedSignalWait<Signals> : UntypedSignalWait;

/**
 * Thrown by a sleep or signal wait that ends the attempt. Let it through: the attempt is over
 * (the worker suspends the job even if the handler catches it, and ignores what it returns).
 * It is also the reason `ctx.signal` aborts with, so work beside the wait (the other half of a
 * `Promise.all`) stops before the job waits: `ctx.signal.reason instanceof Suspension` tells this
 * end of the attempt from a timeout or a lost lease.
 */
export class Suspension extends Error {
  constructor(readonly wait: WakeWait) {
    super(`the job waits for ${wait.kind} "${wait.key}" until ${wait.until}; let this error through`);
    this.name = 'Suspension';
  }
}

/** The job the steps belong to, as its attempt was claimed. */
interface JobRun {
  id: string;
  /** Names the incarnation of the id whose journal this is (a later job of the same id has its own). */
  createdAt: string;
  attempts: number;
  retries?: number;
  resumes?: number;
  /** Reruns so far: an invoke a rerun dropped starts a new child. */
  reruns?: number;
  /** The journal's series its last rerun started (see `journalScopeOf`). */
  journal?: string;
}

export interface WorkflowOptions {
  job: JobRun;
  /** Without one, every call fails the job with a StepUsageError. */
  journal?: Journal;
  /** The match index of event waits; without it, `ctx.waitForEvent` fails the job (StepUsageError). */
  eventWaits?: EventWaits;
  /** What `ctx.emit` sends through; without it, `ctx.emit` fails the job (StepUsageError). */
  events?: EventSender;
  clock: Clock;
  /** The attempt's abort signal: nothing is run or recorded once it fired. */
  signal: AbortSignal;
  /** Epoch seconds an entry written at `now` expires. */
  expiresAt(now: number): number;
  /**
   * Called when a sleep or a wait ends the attempt (before its call throws the Suspension): the
   * worker then stops the handler, as after a timeout. Called again when a second wait joins it.
   */
  onSuspend?(wait: WakeWait): void;
  /** Starts and looks at invoked children. Without one, `ctx.invoke` fails the job with a StepUsageError. */
  invoker?: Invoker;
  /**
   * The payload bucket: step results over {@link MAX_STEP_RESULT_BYTES} are kept there (up to
   * MAX_BLOB_BYTES), and offloaded step results and signals are read back. @default none: larger
   * step results fail the job (StepUsageError), as before
   */
  blobs?: BlobStore;
  /**
   * The code version this worker runs (`codeVersionOf`), written on each entry it records, and
   * named by a {@link NondeterminismError}. @default none
   */
  version?: string;
}

/** The steps of one attempt, and what it asked to wait for (read by the worker once the handler is done). */
export function createWorkflow(options: WorkflowOptions): WorkflowSteps & {
  suspended(): WakeWait | undefined;
  /** The children an invoke's wait awaits (each invoke's start), when the attempt ends on one. */
  invoked(): readonly InvokeStart[];
  settle(withinMs: number): Promise<boolean>;
  /**
   * The misuse that fails the attempt whatever the handler did. `returned`: the handler returned,
   * so a replay that did not make every call its journal recorded (a step removed at the end)
   * is one too (a NondeterminismError).
   */
  misuse(returned?: boolean): PermanentError | undefined;
} {
  const { job, clock, signal } = options;
  /** Calls not settled yet: a handler may settle before them (a rejected Promise.all). */
  const inFlight = new Set<Promise<unknown>>();
  const track = <T>(call: Promise<T>): Promise<T> => {
    inFlight.add(call);
    const done = () => inFlight.delete(call);
    call.then(done, done);
    return call;
  };
  // The job's first run ever: nothing can have been recorded yet, so nothing is read.
  const fresh = job.attempts === 1 && !job.retries && !job.resumes;
  const scope: JournalScope = journalScopeOf(job);
  /** The recorded entries, loaded once per attempt at the first call that needs one. */
  let recorded: Promise<RecordedEntries> | undefined;
  const used = new Set<string>();
  let pending: WakeWait | undefined;
  /** A misuse that must fail the job even if the handler swallowed it (two signal waits at once, a replay that diverged). */
  let misuse: PermanentError | undefined;
  /** Calls begun so far in this run: the next call's position (core/replay.ts). */
  let calls = 0;
  /** Each call's position, and whether it began with no other call in flight. */
  const callAt = new Map<string, { seq: number; quiet: boolean; nested?: boolean }>();
  /**
   * The position of the step whose body is running, in that body (a call made there is nested:
   * a replay gets the outer step's recorded result and never makes it, so it takes no position).
   */
  const inBody = new AsyncLocalStorage<number>();
  /** The run's calls by position (their keys). */
  const began: string[] = [];
  /** Calls whose position was compared with the journal. */
  const verified = new Set<string>();
  /** The journal as the replay checks read it, built once from the loaded entries. */
  let trail: ReplayTrail | undefined;
  /** `ctx.patched` answers of this run, and those taken (true) not yet written on an entry. */
  const patchAnswers = new Map<string, boolean>();
  const unwrittenPatches = new Set<string>();
  const iso = (ms: number) => new Date(ms).toISOString();
  /**
   * When the job's waits must have ended: {@link MAX_WAIT_MS} after its creation. Its journal
   * entries are kept {@link JOURNAL_RETENTION_DAYS} (two years) after they are written, a year of
   * waits plus a year of retries and retention, so a job that slept on past a year could replay a
   * step whose entry is gone, and run it again.
   */
  const lifeEnd = Date.parse(job.createdAt) + MAX_WAIT_MS;
  /** `until`, checked against {@link lifeEnd}. */
  const withinLife = (until: number, what: string): number => {
    if (until > lifeEnd) {
      throw new ValidationError(
        `${what} would end ${iso(until)}, but a job's waits must end within 366 days of its creation (${iso(lifeEnd)})`,
        [{ path: 'duration', message: "must end within 366 days of the job's creation" }],
      );
    }
    return until;
  };

  function journalOf(): Journal {
    if (!options.journal) throw new StepUsageError('this worker has no journal: steps, sleeps and waits need one');
    return options.journal;
  }

  /** Checks a call may go on, and claims its name for this run. */
  function begin(kind: 'step' | 'sleep' | 'signal' | 'invoke', name: string): Journal {
    if (signal.aborted) throw signal.reason;
    if (pending) throw new Suspension(pending);
    asUsage(() => checkName(name, kind));
    const key = `${kind}#${name}`;
    if (used.has(key)) {
      throw new StepUsageError(`${kind} "${name}" was used twice in one run: names must be unique within a job`);
    }
    used.add(key);
    if (misuse instanceof NondeterminismError) throw misuse;
    const call = { kind: callKindOf(kind) as CallKind, name };
    const outer = inBody.getStore();
    if (outer !== undefined) callAt.set(callKeyOf(call), { seq: outer, quiet: false, nested: true });
    else {
      callAt.set(callKeyOf(call), { seq: calls++, quiet: inFlight.size === 0 });
      began.push(callKeyOf(call));
    }
    return journalOf();
  }

  /** The error that fails the attempt for `divergence`; kept, so the attempt fails even if the handler swallows it. */
  function diverged(divergence: Divergence): NondeterminismError {
    const error = new NondeterminismError(
      `this code does not replay the job's journal: ${describeDivergence(divergence, options.version)}. ` +
        'The job is held for an operator (state held, reason nondeterministic): retry it after a fix, rerun it from a step, or cancel it; see docs/workflows.md "Changing code safely"',
      { ...divergence, ...(options.version ? { version: options.version } : {}) },
    );
    misuse ??= error;
    return error;
  }

  /** Compares a call with the journal, once, at its first read (a replay's: the first run reads nothing). */
  function verify(kind: JournalKind, name: string, entries: RecordedEntries): void {
    const callKind = callKindOf(kind);
    if (!callKind) return;
    const key = callKeyOf({ kind: callKind, name });
    if (verified.has(key)) return;
    verified.add(key);
    const at = callAt.get(key);
    trail ??= new ReplayTrail(entries);
    const divergence = at ? trail.check({ kind: callKind, name }, at.seq, at.quiet, began) : undefined;
    if (divergence) throw diverged(divergence);
  }

  async function read(kind: JournalKind, name: string) {
    if (fresh) return undefined;
    recorded ??= journalOf().load(scope);
    const entries = await untilAborted(recorded, signal);
    verify(kind, name, entries);
    return entries.get(entryName(kind, name));
  }

  /** A stored value as the handler gets it: an offloaded one read back (one S3 GET), else itself. */
  async function resolveStored(value: unknown): Promise<unknown> {
    return await untilAborted(resolveBlob(options.blobs, value), signal);
  }

  /**
   * A step result as it is recorded: itself within {@link MAX_STEP_RESULT_BYTES}, else a reference
   * to an object of the payload bucket (one S3 PUT, under a key of its own for this attempt).
   */
  async function offloadStep(name: string, value: unknown): Promise<unknown> {
    if (signal.aborted) throw signal.reason;
    const bytes = jsonBytes(value);
    if (!mustOffload(value, bytes, MAX_STEP_RESULT_BYTES)) return value;
    const key = () => blobKey('step', job.id, `${job.attempts}-${randomUUID()}`);
    const offloaded = offload(options.blobs, value, {
      inlineLimit: MAX_STEP_RESULT_BYTES,
      key,
      what: `step "${name}" result`,
    });
    return await untilAborted(
      offloaded.catch((error: unknown) => {
        throw error instanceof ValidationError ? new StepUsageError(error.message) : error;
      }),
      signal,
    );
  }

  /** Records `value` under the name unless it was recorded first; returns what stands. */
  async function record(kind: JournalKind, name: string, value: unknown): Promise<unknown> {
    if (signal.aborted) throw signal.reason;
    const now = clock.now();
    const at = callAt.get(callKeyOf({ kind: callKindOf(kind) as CallKind, name }));
    const patches = [...unwrittenPatches];
    const mark =
      at === undefined
        ? undefined
        : {
            seq: at.seq,
            ...(options.version ? { version: options.version } : {}),
            ...(patches.length ? { patches } : {}),
            // made in a step's body (`seq` is that step's), or began beside another call: no
            // barrier of this run (core/replay.ts)
            ...(at.nested ? { nested: true } : at.quiet ? {} : { racing: true }),
          };
    const out = await untilAborted(
      journalOf().record({
        ...scope,
        kind,
        name,
        value,
        at: now,
        expiresAt: options.expiresAt(now),
        ...(mark ? { mark } : {}),
      }),
      signal,
    );
    if (out.recorded) for (const p of patches) unwrittenPatches.delete(p);
    return out.recorded ? value : out.existing.value;
  }

  /**
   * Ends the attempt to wait until `until`, or waits it out here when it is that close: `over`
   * when it was over already, `waited` when it was waited out here.
   */
  async function waitUntil(wait: Omit<WakeWait, 'since'>): Promise<'over' | 'waited'> {
    const now = clock.now();
    const remaining = Date.parse(wait.until) - now;
    if (remaining <= 0) return 'over';
    if (remaining <= IN_ATTEMPT_WAIT_MS) {
      await sleep(remaining, undefined, { signal });
      return 'waited';
    }
    try {
      pending = merged(pending, { ...wait, since: iso(now) });
    } catch (error) {
      misuse = error as StepUsageError;
      throw error;
    }
    options.onSuspend?.(pending);
    throw new Suspension(pending);
  }

  /**
   * A wait for the signal `name`. `beforeWait` (an event wait's registration and look) runs once
   * the inbox held nothing, before the deadline is recorded: what it finds is the outcome.
   */
  async function signalWait<T>(
    name: string,
    waitOptions: WaitForSignalOptions,
    beforeWait?: (deadline: number) => Promise<{ payload: unknown } | undefined>,
  ): Promise<T | null> {
    const journal = begin('signal', name);
    const look = () => untilAborted(journal.signal({ ...scope, name }), signal);
    let arrived: InboxSignal | undefined;
    /** What the recorded outcome (a SignalOutcome) makes the wait return. */
    const outcome = async (value: unknown): Promise<T | null> => {
      const timedOut = timedOutAt(value);
      if (timedOut !== undefined) {
        if (waitOptions.onTimeout === 'throw') throw new SignalTimeoutError(name, timedOut);
        return null;
      }
      const o = (value ?? {}) as { payload?: unknown; received?: string };
      // recorded by the send: the signal is the inbox's
      if (o.received !== undefined) arrived ??= await look();
      return (await resolveStored(('payload' in o ? o.payload : arrived?.payload) ?? null)) as T | null;
    };
    const done = await read('signal', name);
    if (done) return outcome(done.value);
    // a signal may have come before the job ever ran: the inbox is read on every run
    arrived = await look();
    if (arrived) return outcome(await record('signal', name, { payload: arrived.payload }));
    let until = (await read('wait', name))?.value as number | undefined;
    if (until === undefined) {
      const deadline = asUsage(() => {
        // without a timeout, the wait lasts as long as the job may live
        if (waitOptions.timeout === undefined) return Math.min(clock.now() + MAX_WAIT_MS, lifeEnd);
        const ms = parseDuration(waitOptions.timeout);
        if (ms > MAX_WAIT_MS) {
          throw new ValidationError('a signal wait may last at most 366 days', [
            { path: 'timeout', message: 'must be at most 366 days' },
          ]);
        }
        return withinLife(clock.now() + ms, `signal wait "${name}"`);
      });
      const found = beforeWait ? await beforeWait(deadline) : undefined;
      if (found) return outcome(await record('signal', name, { payload: found.payload }));
      until = (await record('wait', name, deadline)) as number;
    }
    const over = await waitUntil({ kind: 'signal', key: name, until: iso(until) });
    // No signal is lost to timing. A wait waited out here (its last second) kept the job
    // running, so no send could wake it: it looks at the inbox again. Then the outcome is
    // recorded, and the first write of it wins, the send's included (SignalsService records
    // the signal it stored as the outcome before it answers). So a signal stored before this
    // look is returned; one stored after it either recorded itself first (the timeout below is
    // refused, and the wait returns the signal) or finds the timeout recorded and is answered
    // `late`. (A wait already over when it began read the inbox just above.)
    if (over === 'waited') arrived = await look();
    const ended: SignalOutcome = arrived ? { payload: arrived.payload } : { timedOutAt: iso(until) };
    return outcome(await record('signal', name, ended));
  }

  /** The children the attempt's invokes wait for. */
  const awaited: InvokeStart[] = [];
  /** The first new invoke's edge index: one above every index recorded (0 on the job's first run). */
  let firstIndex: Promise<number> | undefined;
  /** New invokes of this run so far: each takes the next index, in the order of its call. */
  let issued = 0;
  async function newIndex(): Promise<number> {
    const k = issued++;
    firstIndex ??= (async () => {
      if (fresh) return 0;
      recorded ??= journalOf().load(scope);
      // a rerun's marker carries the floor of the journal it cut: no index a dropped invoke used
      let next = 0;
      for (const [key, entry] of await untilAborted(recorded, signal)) {
        const parsed = parseEntryName(key);
        const floor = parsed ? invokeFloorOf(parsed.kind, entry.value) : undefined;
        if (floor !== undefined) next = Math.max(next, floor);
      }
      return next;
    })();
    return (await firstIndex) + k;
  }

  /** What an invoke returns (or throws) for its child's recorded end. */
  async function invokeResult<T>(name: string, id: string, value: unknown): Promise<T> {
    const outcome = value as InvokeOutcome;
    // a child's result over 64 KiB is kept offloaded on the child: read it back
    if (outcome.state === 'succeeded') return (await resolveStored(outcome.result)) as T;
    throw new InvokedJobFailedError(name, id, outcome.state, outcome.error);
  }

  /** Ends the attempt to wait for the child `start` (with every other invoke of the run). */
  function awaitChild(name: string, start: InvokeStart): never {
    awaited.push(start);
    const now = iso(clock.now());
    try {
      pending = merged(pending, { kind: 'invoke', key: name, until: iso(lifeEnd), since: now });
    } catch (error) {
      misuse = error as StepUsageError;
      throw error;
    }
    pending = { ...pending, children: awaited.length };
    options.onSuspend?.(pending);
    throw new Suspension(pending);
  }

  const steps: WorkflowSteps = {
    async invoke<T>(name: string, type: string, payload: unknown, invokeOptions: InvokeOptions = {}): Promise<T> {
      begin('invoke', name);
      const invoker = options.invoker;
      if (!invoker) throw new StepUsageError('this worker cannot invoke jobs: ctx.invoke needs a job graph');
      const ended = await read('invoked', name);
      let start = (await read('invoke', name))?.value as InvokeStart | undefined;
      if (ended) return invokeResult<T>(name, start?.id ?? '', ended.value);
      let child: Job | undefined;
      if (start) {
        child = await untilAborted(invoker.look(start.id), signal);
      } else {
        const id = invokeOptions.id ?? invokedChildId(job.id, name, job.reruns ?? 0);
        if (!JOB_ID_PATTERN.test(id) || id === job.id) {
          throw new StepUsageError(`invoke "${name}": "${id}" is not a valid child id`);
        }
        // kept inline on the child (not offloaded): one shaped like a reference would be read as the object it names
        asUsage(() => refuseReferenceShape(payload, `invoke "${name}" payload`));
        // nothing awaited between this check and the count in newIndex: calls at once count in turn
        if (issued >= MAX_INVOKES_PER_WAIT) {
          throw new StepUsageError(
            `invoke "${name}": a run may await at most ${MAX_INVOKES_PER_WAIT.toLocaleString('en-US')} invokes at once (the children of one wait); invoke the rest from a child, or after this wait`,
          );
        }
        start = (await record('invoke', name, { id, index: await newIndex() })) as InvokeStart;
      }
      if (child && invokeEnded(child.state)) {
        const outcome: InvokeOutcome =
          child.state === 'succeeded'
            ? { state: 'succeeded', result: child.result ?? null }
            : {
                state: child.state,
                ...(child.lastError ? { error: { name: child.lastError.name, message: child.lastError.message } } : {}),
              };
        const storable = asUsage(() => storableValue(outcome, MAX_STEP_RESULT_BYTES, `invoke "${name}" result`));
        return invokeResult<T>(name, start.id, await record('invoked', name, storable));
      }
      if (!child) {
        if (signal.aborted) throw signal.reason;
        await untilAborted(
          invoker.start({
            id: start.id,
            type,
            payload,
            index: start.index,
            maxAttempts: invokeOptions.maxAttempts ?? INVOKE_DEFAULT_MAX_ATTEMPTS,
          }),
          signal,
        );
      }
      return awaitChild(name, start);
    },

    async step<T>(name: string, fn: () => Promise<T> | T): Promise<T> {
      begin('step', name);
      const recorded = await read('step', name);
      if (recorded) return (await resolveStored(recorded.value)) as T;
      const value = await inBody.run(callAt.get(callKeyOf({ kind: 'step', name }))?.seq ?? -1, fn);
      const storable = asUsage(() =>
        storableValue(value, options.blobs ? MAX_BLOB_BYTES : MAX_STEP_RESULT_BYTES, `step "${name}" result`),
      );
      const stored = await offloadStep(name, storable);
      const kept = await record('step', name, stored);
      // ours recorded: the value itself, not read back; another's (a racing attempt's): read back if offloaded
      return (kept === stored ? storable : await resolveStored(kept)) as T;
    },

    async sleep(name: string, duration: number | string | Date): Promise<void> {
      begin('sleep', name);
      let until = (await read('sleep', name))?.value as number | undefined;
      if (until === undefined) {
        until = (await record(
          'sleep',
          name,
          asUsage(() => withinLife(wakeTime(duration, clock.now()), `sleep "${name}"`)),
        )) as number;
      }
      await waitUntil({ kind: 'sleep', key: name, until: iso(until) });
    },

    async waitForSignal<T = unknown>(name: string, waitOptions: WaitForSignalOptions = {}): Promise<T | null> {
      if (typeof name === 'string' && isEventSignal(name)) {
        throw new StepUsageError(
          `signal names starting "${EVENT_SIGNAL_PREFIX}" are the event waits' own: use ctx.waitForEvent`,
        );
      }
      return signalWait<T>(name, waitOptions);
    },

    async emit(event, data, emitOptions = {}) {
      const eventName = typeof event === 'string' ? event : event.name;
      const step = `emit:${emitOptions.step ?? eventName}`;
      begin('step', step);
      const done = await read('step', step);
      if (done) return done.value as { id: string };
      const sender = options.events;
      if (!sender) throw new StepUsageError('this worker sends no events: ctx.emit needs an event sender');
      // after a rerun, an emit it dropped sends a new event (its series names it)
      const id = emitEventId(job.id, scope.series ? `${scope.incarnation}.${scope.series}` : scope.incarnation, step);
      try {
        await untilAborted(sender.send({ name: eventName, id, data: data as Record<string, unknown> }), signal);
      } catch (error) {
        // data the event refuses is refused again on every attempt: the job's own mistake
        if (error instanceof OrreryError && error.status >= 400 && error.status < 500 && error.status !== 429) {
          throw new StepUsageError(`ctx.emit("${eventName}") was refused: ${error.message}`, { cause: error });
        }
        throw error;
      }
      return (await record('step', step, { id })) as { id: string };
    },

    async waitForEvent(event, waitOptions) {
      const eventName = typeof event === 'string' ? event : event.name;
      const { path, value } = asUsage(() => parseMatch(waitOptions?.match));
      if (typeof event !== 'string' && !(event.matchOn ?? []).includes(path)) {
        throw new StepUsageError(
          `event "${eventName}" declares no matchOn "${path}": add it to its defineEvent, or no event will match`,
        );
      }
      const name = eventSignalName(waitOptions.step ?? eventName);
      const index = options.eventWaits;
      const got = await signalWait<SentEvent>(name, waitOptions, async (deadline) => {
        if (!index) throw new StepUsageError('this worker has no event waits: ctx.waitForEvent needs them');
        const key = matchKey(eventName, path, value);
        // register, then look: an event sent from now on finds this waiter, and one sent since
        // the job was created is found here (docs/workflows.md, "Events: ctx.emit and ctx.waitForEvent")
        const expiresAt = Math.ceil(deadline / 1000) + 86_400;
        await untilAborted(
          index.register(key, { jobId: job.id, incarnation: scope.incarnation, signal: name }, expiresAt),
          signal,
        );
        const sent = await untilAborted(index.firstSince(key, job.createdAt), signal);
        return sent ? { payload: { id: sent.id, name: sent.name, data: sent.data } } : undefined;
      });
      return got === null ? null : { id: got.id, name: got.name, data: got.data as never };
    },

    async patched(name: string): Promise<boolean> {
      if (signal.aborted) throw signal.reason;
      asUsage(() => checkName(name, 'step'));
      // where the run is: the calls begun before this one (a patch takes no place of its own)
      const position = calls;
      const known = patchAnswers.get(name);
      if (known !== undefined) return known;
      let answer = true;
      if (!fresh) {
        recorded ??= journalOf().load(scope);
        trail ??= new ReplayTrail(await untilAborted(recorded, signal));
        answer = patchAnswers.get(name) ?? trail.patched(name, position);
        if (answer && trail.patches.has(name)) {
          patchAnswers.set(name, answer);
          return answer;
        }
      }
      patchAnswers.set(name, answer);
      if (answer) unwrittenPatches.add(name);
      return answer;
    },
  };

  return {
    step: (name, fn) => track(steps.step(name, fn)),
    sleep: (name, duration) => track(steps.sleep(name, duration)),
    waitForSignal: (name, waitOptions) => track(steps.waitForSignal(name, waitOptions)),
    emit: (event, data, emitOptions) => track(steps.emit(event, data, emitOptions)),
    waitForEvent: (event, waitOptions) => track(steps.waitForEvent(event, waitOptions)),
    invoke: (name, type, payload, invokeOptions) => track(steps.invoke(name, type, payload, invokeOptions)),
    patched: (name) => steps.patched(name),
    suspended: () => pending,
    invoked: () => awaited,
    misuse(returned = false) {
      if (returned && !pending && trail && !misuse) {
        const divergence = trail.unreached(new Set(callAt.keys()));
        if (divergence) diverged(divergence);
      }
      return misuse;
    },
    /** Waits up to `withinMs` for every call the handler left running; true when none is left. */
    async settle(withinMs: number): Promise<boolean> {
      if (inFlight.size === 0) return true;
      let timer: NodeJS.Timeout | undefined;
      const settled = await Promise.race([
        Promise.allSettled([...inFlight]).then(() => true),
        new Promise<false>((resolve) => {
          timer = setTimeout(() => resolve(false), withinMs);
        }),
      ]);
      clearTimeout(timer);
      return settled && inFlight.size === 0;
    },
  };
}

/**
 * Two waits at once (a `Promise.all` of a sleep and a signal wait): the job is due at the earlier
 * end, and a signal still wakes it. Two signals at once cannot both wake it: that is refused.
 */
function merged(pending: WakeWait | undefined, next: WakeWait): WakeWait {
  if (!pending) return next;
  if ((pending.kind === 'invoke') !== (next.kind === 'invoke')) {
    throw new StepUsageError(
      `an invoke ("${pending.kind === 'invoke' ? pending.key : next.key}") and a ${pending.kind === 'invoke' ? next.kind : pending.kind} wait at once: a job waits for its invoked children alone`,
    );
  }
  if (pending.kind === 'invoke') return pending;
  if (pending.kind === 'signal' && next.kind === 'signal' && pending.key !== next.key) {
    throw new StepUsageError(
      `waits for signals "${pending.key}" and "${next.key}" at once: wait for one signal at a time`,
    );
  }
  const signal = pending.kind === 'signal' ? pending : next.kind === 'signal' ? next : undefined;
  const until = Date.parse(pending.until) <= Date.parse(next.until) ? pending.until : next.until;
  const since = Date.parse(pending.since) <= Date.parse(next.since) ? pending.since : next.since;
  return { ...(signal ?? pending), until, since };
}

/** Runs `check`; a validation problem is the handler's misuse of the steps, so the job fails (StepUsageError). */
function asUsage<T>(check: () => T): T {
  try {
    return check();
  } catch (error) {
    throw error instanceof ValidationError ? new StepUsageError(error.message, { cause: error }) : error;
  }
}
