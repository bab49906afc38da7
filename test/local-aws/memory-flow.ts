/**
 * In-memory {@link FlowSlots}, {@link Pacer} and {@link Debouncer}, for the unit tests and the
 * in-memory mode. They pass the same contract suites as `DynamoFlowSlots`, `DynamoPacer` and
 * `DynamoDebouncer` (test/contract/), and keep the same counters, so a unit test sees what the
 * adapter would do.
 */

import type { Debouncer, DebounceWindow } from '../../shared/core/debounce';
import {
  chooseFairKey,
  DEFAULT_FAIR_WEIGHT,
  type FairWaiting,
  fairLineOf,
  SHARED_FAIR_LINE,
} from '../../shared/core/fair-share';
import {
  type AcquireInput,
  type AcquireResult,
  type Admitted,
  effectiveLimit,
  type FlowSlots,
  type Holder,
  type InLine,
  type RuntimeLimit,
  type SetLimitInput,
  type SetWeightInput,
  type Slot,
  type SlotState,
} from '../../shared/core/flow';
import {
  conforms,
  type LineTurn,
  lineEstimate,
  nextTurn,
  type Pace,
  type PaceLineEntry,
  type Pacer,
  type RuntimePace,
  rescaleTat,
  turnFree,
  turnOverdue,
} from '../../shared/core/pace';

interface FakeSlot {
  /** Job id → since, attempt token and (a slot shared fairly) fair key, and its line when not its key's. */
  holders: Map<string, { since: number; token: number; fair?: string; fairLine?: string }>;
  issued: number;
  admitted: number;
  /** Ticket → its job and when it was written, or 'skipped'. */
  tickets: Map<number, { jobId: string; type: string; at: number } | 'skipped'>;
  /** The ranked line: entry key → its job (and its fair key and line, in a slot shared fairly). */
  line: Map<string, { jobId: string; type: string; at: number; fair?: string; fairLine?: string }>;
  /** Per fair key in line: since when it waits for a place (`ws:<key>` on the adapter's item). */
  fairSince: Map<string, number>;
  /** Weights set at run time per fair key (`fw:<key>`). */
  fairWeights: Map<string, number>;
  /** The limit set at run time (`lim` on the adapter's slot item), if any. */
  runtimeLimit?: RuntimeLimit;
}

/** As the adapter: the limit that holds, in a waiting answer, when one set at run time replaces the spec's. */
function limitOf(slot: Pick<Slot, 'limit'>, s: FakeSlot): { limit?: number } {
  return s.runtimeLimit ? { limit: effectiveLimit(slot, s.runtimeLimit) } : {};
}

/** The ranked line's first entry key (lowest), if any; with `fairKey`, the first of that key's entries. */
/** An entry's line: its fair key's, or the shared one past the cap. */
const lineOf = (e: { fair?: string; fairLine?: string }) => e.fairLine ?? e.fair;

function headOf(s: FakeSlot, line?: string): string | undefined {
  const keys = [...s.line.entries()].filter(([, e]) => line === undefined || lineOf(e) === line).map(([k]) => k);
  return keys.sort()[0];
}

/** The fair lines waiting, with their counts and since when they wait. */
function fairWaitingOf(s: FakeSlot): FairWaiting[] {
  const counts = new Map<string, number>();
  for (const e of s.line.values()) {
    const line = lineOf(e);
    if (line !== undefined) counts.set(line, (counts.get(line) ?? 0) + 1);
  }
  return [...counts].map(([key, waiting]) => ({ key, waiting, since: s.fairSince.get(key) ?? 0 }));
}

/** As the adapter: the entry a freed place goes to (while fair keys wait, the head of the key picked, whoever admits). */
function nextOf(s: FakeSlot, slot: Pick<Slot, 'fair'>, waiting = fairWaitingOf(s)): string | undefined {
  if (waiting.length === 0) return headOf(s);
  const key = chooseFairKey({
    holders: holdersOf(s),
    waiting,
    weightOf: (k) => s.fairWeights.get(k) ?? slot.fair?.weightOf(k) ?? DEFAULT_FAIR_WEIGHT,
  });
  return (key === undefined ? undefined : headOf(s, key)) ?? headOf(s);
}

/** As the adapter: the job is the next the slot serves when it is the entry served next and no ticket waits. */
function firstInLine(s: FakeSlot, slot: Pick<Slot, 'fair'>, jobId: string): boolean {
  const next = nextOf(s, slot);
  return s.issued === s.admitted && next !== undefined && s.line.get(next)?.jobId === jobId;
}

function holdersOf(s: FakeSlot): Holder[] {
  return [...s.holders.entries()]
    .map(([jobId, h]) => ({
      jobId,
      since: h.since,
      token: h.token,
      ...(h.fair === undefined ? {} : { fair: h.fair }),
      ...(h.fairLine === undefined ? {} : { fairLine: h.fairLine }),
    }))
    .sort((a, b) => (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0));
}

/** The fake's key of an entry: its rank, after its line in a slot shared fairly (as the adapter's sort key). */
const lineKey = (slot: Pick<Slot, 'fair'>, rank: string, line = slot.fair?.key) =>
  line === undefined ? rank : `${line}\u0000${rank}`;

export class FakeFlowSlots implements FlowSlots {
  private readonly slots = new Map<string, FakeSlot>();
  /** Writes per operation, as the adapter would make them (for cost assertions). */
  readonly writes: Record<string, number> = {};
  /** Called before each operation: tests throw from it to inject faults. */
  hook?: (operation: 'acquire' | 'release' | 'admit') => void;

  private slotOf(slot: Pick<Slot, 'scope' | 'key'>): FakeSlot {
    const id = `${slot.scope}#${slot.key}`;
    let s = this.slots.get(id);
    if (!s) {
      s = {
        holders: new Map(),
        issued: 0,
        admitted: 0,
        tickets: new Map(),
        line: new Map(),
        fairSince: new Map(),
        fairWeights: new Map(),
      };
      this.slots.set(id, s);
    }
    return s;
  }

  private write(what: string): void {
    this.writes[what] = (this.writes[what] ?? 0) + 1;
  }

  async acquire(input: AcquireInput): Promise<AcquireResult> {
    this.hook?.('acquire');
    const s = this.slotOf(input.slot);
    const mine = s.holders.get(input.jobId);
    const { rank, waitsAs } = input;
    const fair = input.slot.fair?.key;
    const place = { since: input.now, token: input.token, ...(fair === undefined ? {} : { fair }) };
    // the take: one write, applied or refused (a refused conditional write is billed too)
    this.write('acquire');
    if (mine) {
      // moved to this attempt, unless a newer one holds it
      if (mine.token <= input.token) s.holders.set(input.jobId, place);
      return { kind: 'held', fresh: false };
    }
    // a place free, and nobody waits
    if (s.holders.size < effectiveLimit(input.slot, s.runtimeLimit) && s.issued === s.admitted && s.line.size === 0) {
      s.holders.set(input.jobId, place);
      return { kind: 'held', fresh: true };
    }
    if (input.ticket !== undefined || waitsAs !== undefined) {
      // as the adapter: a job that waited takes its place over first, and the refused take tells
      // whether it still waits (nothing more is written then)
      if (input.ticket !== undefined && input.ticket >= s.admitted && input.ticket < s.issued) {
        return {
          kind: 'waiting',
          ticket: input.ticket,
          first: input.ticket === s.admitted,
          holders: holdersOf(s),
          ...limitOf(input.slot, s),
        };
      }
      const inLine = (rank: string) =>
        s.line.has(lineKey(input.slot, rank)) ||
        (input.slot.fair !== undefined && s.line.has(lineKey(input.slot, rank, SHARED_FAIR_LINE)));
      if (waitsAs !== undefined && inLine(waitsAs)) {
        const first = firstInLine(s, input.slot, input.jobId);
        return { kind: 'waiting', rank: waitsAs, first, holders: holdersOf(s), ...limitOf(input.slot, s) };
      }
    }
    if (input.wait === false) return { kind: 'busy', holders: holdersOf(s) };
    if (rank !== undefined) {
      // one transaction in the adapter: the entry and the counts (an entry there already: it
      // waits); past the cap of fair keys waiting, a new key joins the shared line
      const line = fair === undefined ? undefined : fairLineOf(fair, fairWaitingOf(s));
      const key = lineKey(input.slot, rank, line);
      const there = s.line.has(key) || (fair !== undefined && s.line.has(lineKey(input.slot, rank, fair)));
      if (!there) {
        s.line.set(key, {
          jobId: input.jobId,
          type: input.type,
          at: input.now,
          ...(fair === undefined ? {} : { fair }),
          ...(line !== fair ? { fairLine: line } : {}),
        });
        if (line !== undefined && !s.fairSince.has(line)) s.fairSince.set(line, input.now);
        this.write('join');
      }
      const first = firstInLine(s, input.slot, input.jobId);
      return { kind: 'waiting', rank, first, holders: holdersOf(s), ...limitOf(input.slot, s) };
    }
    const ticket = s.issued;
    s.issued += 1;
    s.tickets.set(ticket, { jobId: input.jobId, type: input.type, at: input.now });
    this.write('ticket');
    this.write('ticket-item');
    // as the adapter's ticket write returns them: after the ticket was taken
    return { kind: 'waiting', ticket, first: ticket === s.admitted, holders: holdersOf(s), ...limitOf(input.slot, s) };
  }

  async release(input: { slot: Slot; jobId: string; token?: number }): Promise<boolean> {
    this.hook?.('release');
    const s = this.slotOf(input.slot);
    this.write('release');
    const mine = s.holders.get(input.jobId);
    if (!mine || (input.token !== undefined && mine.token !== input.token)) return false;
    return s.holders.delete(input.jobId);
  }

  async admit(input: {
    slot: Slot;
    now: number;
    onAdmitted?: (admitted: Admitted) => Promise<void>;
  }): Promise<Admitted[]> {
    this.hook?.('admit');
    const s = this.slotOf(input.slot);
    const admitted: Admitted[] = [];
    while ((s.admitted < s.issued || s.line.size > 0) && s.holders.size < effectiveLimit(input.slot, s.runtimeLimit)) {
      // as the adapter: the older of the oldest ticket (by when it was written; one not written
      // goes first) and the ranked line's head (by the time its rank stands for)
      const n = s.admitted;
      const ticket = n < s.issued ? (s.tickets.get(n) ?? 'skipped') : undefined;
      const head = nextOf(s, input.slot);
      const headRank = head === undefined ? undefined : head.slice(head.indexOf('\u0000') + 1);
      const ticketFirst =
        ticket !== undefined &&
        (headRank === undefined ||
          ticket === 'skipped' ||
          ticket.at <= Number(headRank.slice(0, headRank.indexOf('#'))));
      if (ticket !== undefined && ticketFirst) {
        s.admitted += 1;
        this.write('admit');
        if (ticket === 'skipped') continue;
        if (!s.holders.has(ticket.jobId)) s.holders.set(ticket.jobId, { since: input.now, token: 0 });
        const one = { jobId: ticket.jobId, type: ticket.type, ticket: n };
        admitted.push(one);
        await input.onAdmitted?.(one);
        continue;
      }
      // the entry served next (one transaction in the adapter, with its fair key's count and since)
      const holder = s.line.get(head as string) as { jobId: string; type: string; fair?: string; fairLine?: string };
      s.line.delete(head as string);
      this.write('admit-ranked');
      const { fair, fairLine } = holder;
      const line = lineOf(holder);
      if (line !== undefined) {
        if ([...s.line.values()].some((e) => lineOf(e) === line)) s.fairSince.set(line, input.now);
        else s.fairSince.delete(line);
      }
      if (!s.holders.has(holder.jobId)) {
        s.holders.set(holder.jobId, {
          since: input.now,
          token: 0,
          ...(fair === undefined ? {} : { fair }),
          ...(fairLine === undefined ? {} : { fairLine }),
        });
      }
      const one = {
        jobId: holder.jobId,
        type: holder.type,
        rank: headRank as string,
        ...(fair === undefined ? {} : { fair }),
      };
      admitted.push(one);
      await input.onAdmitted?.(one);
    }
    return admitted;
  }

  /** A ticket taken by a job that died before writing its ticket item. */
  orphanTicket(slot: Pick<Slot, 'scope' | 'key'>): void {
    this.slotOf(slot).issued += 1;
  }

  async state(slot: Pick<Slot, 'scope' | 'key'>): Promise<SlotState> {
    const s = this.slotOf(slot);
    return {
      holders: holdersOf(s),
      waiting: Math.max(0, s.issued - s.admitted) + s.line.size,
      issued: s.issued,
      admitted: s.admitted,
      ...(fairWaitingOf(s).length > 0
        ? { waitingByFairKey: Object.fromEntries(fairWaitingOf(s).map((w) => [w.key, w.waiting])) }
        : {}),
      ...(s.fairWeights.size > 0 ? { fairWeights: Object.fromEntries(s.fairWeights) } : {}),
      ...(s.runtimeLimit ? { runtimeLimit: { ...s.runtimeLimit } } : {}),
    };
  }

  async setWeight(input: SetWeightInput): Promise<void> {
    const id = `${input.slot.scope}#${input.slot.key}`;
    this.write('set-weight');
    if (input.weight === undefined) {
      // as the adapter: removing it from a slot with no item creates none
      this.slots.get(id)?.fairWeights.delete(input.fairKey);
      return;
    }
    this.slotOf(input.slot).fairWeights.set(input.fairKey, input.weight);
  }

  async line(input: { slot: Pick<Slot, 'scope' | 'key' | 'fair'>; max: number }): Promise<InLine[]> {
    const s = this.slotOf(input.slot);
    const out: InLine[] = [];
    for (let n = s.admitted; n < s.issued && out.length < input.max; n++) {
      const t = s.tickets.get(n);
      if (t && t !== 'skipped') out.push({ jobId: t.jobId, type: t.type, ticket: n });
    }
    const fair = input.slot.fair?.key;
    const ranked = [...s.line.entries()]
      .filter(([, e]) => fair === undefined || e.fair === fair)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    for (const [k, e] of ranked) {
      if (out.length >= input.max) break;
      const rank = k.slice(k.indexOf('\u0000') + 1);
      out.push({ jobId: e.jobId, type: e.type, rank, ...(e.fair === undefined ? {} : { fair: e.fair }) });
    }
    return out;
  }

  async setLimit(input: SetLimitInput): Promise<void> {
    const id = `${input.slot.scope}#${input.slot.key}`;
    this.write('set-limit');
    if (input.limit === undefined) {
      // as the adapter: removing it from a key with no item creates none
      const s = this.slots.get(id);
      if (s) delete s.runtimeLimit;
      return;
    }
    this.slotOf(input.slot).runtimeLimit = { limit: input.limit, by: input.by, at: input.now };
  }
}

/**
 * In-memory {@link Pacer}: the GCRA reference (`nextTurn`, `conforms`) on a map. It passes the
 * same contract suite as `DynamoPacer` (test/contract/pacer.contract.ts).
 */
export class FakePacer implements Pacer {
  private readonly tats = new Map<string, number>();
  private readonly runtimes = new Map<string, RuntimePace>();
  /** Writes, as the adapter makes them in the usual case (one per call). */
  writes = 0;

  /** As the adapter: the pace set at run time on the key holds over the caller's. */
  private paceOf(id: string, pace: Pace): Pace {
    return this.runtimes.get(id)?.pace ?? pace;
  }

  async takeTurn(input: { scope: string; key: string; now: number; pace: Pace }): Promise<number> {
    const id = `${input.scope}#${input.key}`;
    const turn = nextTurn(this.tats.get(id), input.now, this.paceOf(id, input.pace));
    this.tats.set(id, turn.tat);
    this.writes += 1;
    return turn.at;
  }

  async tryStart(input: { scope: string; key: string; now: number; pace: Pace }): Promise<boolean> {
    const id = `${input.scope}#${input.key}`;
    const result = conforms(this.tats.get(id), input.now, this.paceOf(id, input.pace));
    if (result.tat !== undefined) this.tats.set(id, result.tat);
    this.writes += 1;
    return result.ok;
  }

  async state(input: { scope: string; key: string }): Promise<number | undefined> {
    return this.tats.get(`${input.scope}#${input.key}`);
  }

  async setPace(input: {
    scope: string;
    key: string;
    runtime: RuntimePace | undefined;
    spec: Pace;
    now: number;
  }): Promise<void> {
    const id = `${input.scope}#${input.key}`;
    this.writes += 1;
    // as the adapter: the starts the key is ahead by carry over to the new pace
    const from = this.paceOf(id, input.spec);
    const tat = rescaleTat(this.tats.get(id), input.now, from, input.runtime?.pace ?? input.spec);
    if (tat !== undefined) this.tats.set(id, tat);
    if (input.runtime) this.runtimes.set(id, { ...input.runtime });
    else this.runtimes.delete(id);
  }

  async runtimePace(input: { scope: string; key: string }): Promise<RuntimePace | undefined> {
    const found = this.runtimes.get(`${input.scope}#${input.key}`);
    return found ? { ...found } : undefined;
  }

  /** Each key's line, by rank key. */
  private readonly lines = new Map<string, Map<string, PaceLineEntry>>();

  private lineOf(id: string): Map<string, PaceLineEntry> {
    let line = this.lines.get(id);
    if (!line) {
      line = new Map();
      this.lines.set(id, line);
    }
    return line;
  }

  /** As the adapter (shared/aws/pace-line.ts), each step atomic: the write units it counts are the adapter's. */
  async lineTurn(input: {
    scope: string;
    key: string;
    now: number;
    pace: Pace;
    job: PaceLineEntry;
    inLine: boolean;
  }): Promise<LineTurn> {
    const id = `${input.scope}#${input.key}`;
    const { now, job } = input;
    const pace = this.paceOf(id, input.pace);
    const tat = this.tats.get(id);
    const line = this.lineOf(id);
    const waiting = line.size;
    const free = turnFree(tat, now, pace);
    const take = () => this.tats.set(id, nextTurn(tat, now, pace).tat);
    if (free && waiting === 0) {
      take();
      this.writes += 1;
      return { kind: 'go' };
    }
    const there = line.has(job.rank);
    if (!free) {
      // as the adapter: a job that believes it waits is not looked up until a turn is free
      if (input.inLine) return { kind: 'wait', until: lineEstimate(tat, now, pace, 0), joined: false };
      // as the adapter: no job ahead of it, and its estimate is the next turn
      const ahead = waiting > 0 && [...line.keys()].some((rank) => rank < job.rank) ? waiting : 0;
      if (there) return { kind: 'wait', until: lineEstimate(tat, now, pace, ahead), joined: false };
      line.set(job.rank, { ...job, joinedAt: now });
      this.writes += 4;
      return { kind: 'wait', until: lineEstimate(tat, now, pace, ahead), joined: true };
    }
    const first = [...line.keys()]
      .sort()
      .slice(0, 2)
      .map((rank) => ({ ...(line.get(rank) as PaceLineEntry) }));
    const [head, next] = first as [PaceLineEntry, PaceLineEntry | undefined];
    if (head.rank === job.rank) {
      take();
      line.delete(job.rank);
      this.writes += 4;
      return next ? { kind: 'go', next } : { kind: 'go' };
    }
    if (!there) {
      line.set(job.rank, { ...job, joinedAt: now });
      this.writes += 4;
    }
    const until = lineEstimate(tat, now, pace, waiting);
    if (!turnOverdue(tat, now, pace)) return { kind: 'wait', until, joined: !there };
    return { kind: 'wait', until, joined: !there, head: { ...head } };
  }

  async leaveLine(input: { scope: string; key: string; rank: string }): Promise<boolean> {
    const line = this.lineOf(`${input.scope}#${input.key}`);
    if (!line.delete(input.rank)) return false;
    this.writes += 4;
    return true;
  }

  async line(input: { scope: string; key: string; max: number }): Promise<PaceLineEntry[]> {
    const line = this.lineOf(`${input.scope}#${input.key}`);
    return [...line.keys()]
      .sort()
      .slice(0, Math.max(0, input.max))
      .map((rank) => ({ ...(line.get(rank) as PaceLineEntry) }));
  }
}

/** In-memory {@link Debouncer}; passes the same contract as `DynamoDebouncer` (test/contract/debouncer.contract.ts). */
export class FakeDebouncer implements Debouncer {
  private readonly windows = new Map<string, DebounceWindow>();
  private readonly seqs = new Map<string, number>();
  writes = 0;

  async open(input: { scope: string; key: string; jobId: string; now: number }) {
    const id = `${input.scope}#${input.key}`;
    const old = this.windows.get(id) ?? {};
    const first = old.first ?? input.now;
    const seq = (this.seqs.get(id) ?? 0) + 1;
    this.seqs.set(id, seq);
    this.windows.set(id, { ...old, run: input.jobId, first });
    this.writes += 1;
    return { ...(old.run !== undefined && old.run !== input.jobId ? { previous: old.run } : {}), first, seq };
  }

  async close(input: { scope: string; key: string; jobId: string }): Promise<void> {
    const id = `${input.scope}#${input.key}`;
    this.writes += 1;
    const w = this.windows.get(id);
    if (w?.run !== input.jobId) return;
    const { run, first, ...rest } = w;
    this.windows.set(id, { ...rest, lastRun: run, ...(first === undefined ? {} : { lastFirst: first }) });
  }

  async adopt(input: { scope: string; key: string; from: string; to: string }): Promise<boolean> {
    const id = `${input.scope}#${input.key}`;
    this.writes += 1;
    const w = this.windows.get(id);
    if (w?.run !== input.from) return false;
    this.windows.set(id, { ...w, run: input.to });
    return true;
  }

  async state(input: { scope: string; key: string }): Promise<DebounceWindow> {
    return { ...(this.windows.get(`${input.scope}#${input.key}`) ?? {}) };
  }
}
