/**
 * Replay checks: does the code that runs a job now make the calls its journal recorded, in the
 * same order? A run's journal holds its entries by name (`<kind>#<name>`), so a step that was
 * renamed, removed or moved would otherwise be matched by name alone: a renamed step runs its
 * work again, a removed or moved one hands its recorded results to code that no longer expects
 * them. Each entry the worker records carries an {@link EntryMark}: the call's position in the run
 * (`seq`: the handler's 0th, 1st, … `ctx` call), the code version that recorded it, and the
 * `ctx.patched` names the run took on new code. A replay compares each call with the journal
 * ({@link ReplayTrail.check}) and stops at the first divergence. See docs/workflows.md,
 * "Changing code safely".
 */
import type { EntryMark, JournalKind, RecordedEntries } from './journal';
import { parseEntryName } from './journal';

export type { EntryMark };

/** What a handler calls that takes a place in the journal's order. */
export type CallKind = 'step' | 'sleep' | 'wait' | 'invoke';

/** One call as the journal or the code names it: its kind and name. */
export interface CallName {
  kind: CallKind;
  name: string;
}

/** The call kind an entry's kind belongs to (a signal wait's deadline and outcome are one wait), or undefined (a rerun's marker). */
export function callKindOf(kind: JournalKind): CallKind | undefined {
  switch (kind) {
    case 'step':
    case 'sleep':
    case 'invoke':
      return kind;
    case 'invoked':
      return 'invoke';
    case 'wait':
    case 'signal':
      return 'wait';
    default:
      return undefined;
  }
}

/** The entry kinds only the worker writes: a run that has one of them unmarked started before marks existed. */
const WORKER_ONLY: readonly JournalKind[] = ['step', 'sleep', 'wait', 'invoke'];

/** Where a run's calls and its journal part: the position, what the journal recorded there and what the code called. */
export interface Divergence {
  /** The call's position in the run (0 = the handler's first `ctx` call). */
  position: number;
  /** What the journal recorded at that position, when it recorded anything there. */
  recorded?: CallName & { version?: string };
  /** What the code called there, or undefined when the run ended without reaching it. */
  called?: CallName;
  /** Where the journal recorded the call the code made, when it did at another position. */
  recordedAt?: number;
}

/** A divergence as one line: the position, both calls and both versions. */
export function describeDivergence(d: Divergence, version?: string): string {
  const show = (c: CallName | undefined) => (c ? `${c.kind} "${c.name}"` : 'nothing');
  const recorded = d.recorded
    ? `the journal recorded ${show(d.recorded)}${d.recorded.version ? ` (version ${d.recorded.version})` : ''}`
    : 'the journal recorded nothing there';
  const called = d.called ? `this code called ${show(d.called)}` : 'this code ended the run without reaching it';
  const moved = d.recordedAt !== undefined ? `, which the journal recorded at position ${d.recordedAt}` : '';
  return `position ${d.position}: ${recorded}; ${called}${moved}${version ? ` (version ${version})` : ''}`;
}

const callKey = (c: CallName) => `${c.kind}#${c.name}`;

/**
 * A journal read for replay: its calls by position and by name, and the patches its runs took.
 * @example
 * const trail = new ReplayTrail(await journal.load(scope));
 * trail.check({ kind: 'step', name: 'charge' }, 1, true, ['step#reserve', 'step#charge']); // a Divergence, or undefined
 */
export class ReplayTrail {
  /** The recorded call at each position (marked entries only), and whether it began racing another. */
  readonly bySeq = new Map<number, CallName & { version?: string; racing?: boolean }>();
  /** The position each recorded call was made at (undefined: recorded without a mark). */
  readonly byCall = new Map<string, number | undefined>();
  /** Every patch name a run of this journal took. */
  readonly patches = new Set<string>();
  /** The highest position recorded, -1 for none. */
  readonly last: number = -1;
  /** The journal has a worker entry without a mark: its run started on code older than marks. */
  readonly unmarked: boolean = false;
  /** The version that recorded the run's first entry (its lowest position). */
  readonly firstVersion: string | undefined;

  constructor(entries: RecordedEntries) {
    let last = -1;
    let unmarked = false;
    for (const [key, entry] of entries) {
      const parsed = parseEntryName(key);
      const kind = parsed && callKindOf(parsed.kind);
      if (!parsed || !kind) continue;
      const call = { kind, name: parsed.name };
      const mark = entry.mark;
      for (const p of mark?.patches ?? []) this.patches.add(p);
      // a call made in a step's body: a replay never makes it (it gets the outer step's result)
      if (mark?.nested) {
        if (!this.byCall.has(callKey(call))) this.byCall.set(callKey(call), undefined);
        continue;
      }
      if (!mark) {
        if (WORKER_ONLY.includes(parsed.kind)) unmarked = true;
        if (!this.byCall.has(callKey(call))) this.byCall.set(callKey(call), undefined);
        continue;
      }
      this.byCall.set(callKey(call), mark.seq);
      this.bySeq.set(mark.seq, {
        ...call,
        ...(mark.version ? { version: mark.version } : {}),
        ...(mark.racing ? { racing: true } : {}),
      });
      last = Math.max(last, mark.seq);
    }
    this.last = last;
    this.unmarked = unmarked;
    let first = Number.POSITIVE_INFINITY;
    for (const seq of this.bySeq.keys()) first = Math.min(first, seq);
    this.firstVersion = this.bySeq.get(first)?.version;
  }

  /** True when the journal recorded the call (under any position, or none). */
  has(call: CallName): boolean {
    return this.byCall.has(callKey(call));
  }

  /**
   * The divergence of `call`, made at `position`, from the journal, or undefined when it agrees.
   * `began`: the keys ({@link callKeyOf}) of the run's calls by position, this one's included;
   * `quiet`: no other `ctx` call of the run was in flight when it began.
   *
   * A position is compared only at a **barrier**: a quiet call whose earlier calls are exactly the
   * ones the journal recorded before that position. Calls racing each other (two `await` chains
   * in a `Promise.all`) may start in another order on a replay than they did, so they are
   * compared by name alone; the first quiet call after them is a barrier again. Sequential code
   * makes every call a barrier, so its first renamed, removed or moved call is the one named.
   * Nor is a position a barrier when the call recorded there began racing another (its mark's
   * `racing`): a call quiet on a replay (its racing partners' recorded results came at once) may
   * well have begun after it on the first run.
   */
  check(call: CallName, position: number, quiet: boolean, began: readonly string[]): Divergence | undefined {
    if (!quiet || !this.barrier(began, position)) return undefined;
    const at = this.bySeq.get(position);
    if (at?.racing) return undefined;
    const key = callKey(call);
    if (this.byCall.has(key)) {
      const seq = this.byCall.get(key);
      if (seq === undefined || seq === position) return undefined;
      return { position, ...(at ? { recorded: at } : {}), called: call, recordedAt: seq };
    }
    // a new call where the journal recorded another: renamed, or the recorded one was removed
    if (at && callKey(at) !== key) return { position, recorded: at, called: call };
    return undefined;
  }

  /**
   * True when the first `count` calls of `began` are exactly the calls the journal recorded at
   * positions 0 to `count - 1`. A call recorded without a mark (a wait whose outcome the API
   * recorded before the wait began) has no known position: it stands for a position below `count`
   * at which the journal holds no marked entry. A call the journal never recorded (new) does not.
   */
  private barrier(began: readonly string[], count: number): boolean {
    if (count === 0) return true;
    const prefix = this.prefix;
    while (prefix.length < count && prefix.length < began.length) {
      const key = began[prefix.length] as string;
      const seq = this.byCall.has(key) ? this.byCall.get(key) : Number.POSITIVE_INFINITY;
      const before = prefix[prefix.length - 1] ?? { max: -1, marked: 0 };
      prefix.push(seq === undefined ? before : { max: Math.max(before.max, seq), marked: before.marked + 1 });
    }
    const at = prefix[count - 1];
    if (!at || at.max >= count) return false;
    // the marked calls are distinct positions below `count`; the unmarked ones fill the rest
    // only if the journal has no marked entry there
    return this.markedBelow(count) === at.marked;
  }

  /** How many marked entries the journal has below `position` (a binary search of its positions). */
  private markedBelow(position: number): number {
    this.positions ??= [...this.bySeq.keys()].sort((a, b) => a - b);
    const positions = this.positions;
    let lo = 0;
    let hi = positions.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((positions[mid] as number) < position) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The journal's marked positions, in order (built at the first barrier). */
  private positions: number[] | undefined;

  /** {@link barrier}'s running maximum and count of marked calls, by position: `began` only grows, so it is extended, never recomputed. */
  private readonly prefix: { max: number; marked: number }[] = [];

  /**
   * The first recorded call the run did not make, once it ended having made `made` calls (their
   * keys): code that no longer reaches a recorded step. Undefined when every one was made.
   */
  unreached(made: ReadonlySet<string>): Divergence | undefined {
    const positions = [...this.bySeq.keys()].sort((a, b) => a - b);
    for (const position of positions) {
      const { racing: _racing, ...at } = this.bySeq.get(position) as CallName & { version?: string; racing?: boolean };
      if (!made.has(callKey(at))) return { position, recorded: at };
    }
    return undefined;
  }

  /**
   * What `ctx.patched(name)` answers at `position` (the calls made before it): true when the
   * run took the patch before, or has not yet passed this point; false when its journal went
   * past this point without it (the run started on code without the patch).
   */
  patched(name: string, position: number): boolean {
    if (this.patches.has(name)) return true;
    if (this.unmarked) return false;
    return this.last < position;
  }
}

/** The key a call is known by among a run's calls: `<kind>#<name>`. */
export function callKeyOf(call: CallName): string {
  return callKey(call);
}
