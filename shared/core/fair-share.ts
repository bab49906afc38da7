/**
 * Fair share between the keys of one concurrency limit: which waiting key a freed place goes to.
 * Pure: the DynamoDB adapter (shared/aws/flow-slots/ranked-line.ts) and the in-memory fake call
 * {@link chooseFairKey} with what they read, so both hand places on by one rule.
 *
 * The rule: a freed place goes to the waiting key with the lowest running count relative to its
 * weight (`running / weight`). Ties go to the key that has waited longest for a place (since it
 * joined, or since it was last handed one), so keys of equal share take turns. Within a key, the
 * ranked line's order holds (priority, then age).
 */

/** Largest weight a fair key may have: a weight is a share, so 1,000 to 1 is as uneven as it gets. */
export const MAX_FAIR_WEIGHT = 1000;
/** A fair key's weight when the spec gives none, or gives one that is not usable. */
export const DEFAULT_FAIR_WEIGHT = 1;
/**
 * Most fair keys a slot keeps a line of their own for at once. The slot item counts each waiting
 * key (about 30 bytes plus twice the key's length), and every write to it costs 1 write unit per
 * KB: past this many keys waiting at once, a newly waiting key joins the shared line
 * ({@link SHARED_FAIR_LINE}), which takes its turns as one more key, oldest first within it.
 */
export const MAX_FAIR_KEYS_WAITING = 100;
/** The line of the keys past {@link MAX_FAIR_KEYS_WAITING}: the empty string, which no key can be. */
export const SHARED_FAIR_LINE = '';

/** The line a job of `fairKey` joins, given the keys waiting now: its own, or past the cap the shared one. */
export function fairLineOf(fairKey: string, waiting: readonly { key: string }[]): string {
  if (waiting.some((w) => w.key === fairKey) || waiting.length < MAX_FAIR_KEYS_WAITING) return fairKey;
  return SHARED_FAIR_LINE;
}

/** A limit shared fairly between keys: the job's fair key, and the weight of any key. */
export interface FairShare {
  /** This job's fair key (from the limit's `fairBy`). */
  key: string;
  /** The weight of a fair key: the spec's `weight`, checked (see {@link fairWeight}). */
  weightOf(key: string): number;
}

/** A fair key with jobs waiting for a place. */
export interface FairWaiting {
  key: string;
  /** Jobs of the key in line. */
  waiting: number;
  /** Since when (epoch ms) the key has waited for a place: it joined, or was last handed one. */
  since: number;
}

/** Why a weight cannot be used, or undefined when it can. */
export function fairWeightProblem(value: unknown): string | undefined {
  if (typeof value !== 'number' || !Number.isFinite(value)) return 'must be a finite number';
  if (value <= 0 || value > MAX_FAIR_WEIGHT) return `must be more than 0 and at most ${MAX_FAIR_WEIGHT} (got ${value})`;
  return undefined;
}

/**
 * A fair key's weight from the spec's `weight` function: {@link DEFAULT_FAIR_WEIGHT} when there is
 * none, or when it throws or gives an unusable value (a place must still go somewhere; the worker
 * that calls it logs nothing per call, so the docs say to keep `weight` total).
 */
export function fairWeight(weight: ((key: string) => number) | undefined, key: string): number {
  if (!weight) return DEFAULT_FAIR_WEIGHT;
  try {
    const value = weight(key);
    return fairWeightProblem(value) === undefined ? value : DEFAULT_FAIR_WEIGHT;
  } catch {
    return DEFAULT_FAIR_WEIGHT;
  }
}

/** Running places per fair key, from the holders of a slot (by their line: see {@link fairLineOf}). */
export function runningByKey(holders: readonly { fair?: string; fairLine?: string }[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const h of holders) {
    const key = h.fairLine ?? h.fair;
    if (key !== undefined) out.set(key, (out.get(key) ?? 0) + 1);
  }
  return out;
}

/**
 * The waiting key a freed place goes to: lowest `running / weight`, then the longest waiting
 * (`since`), then the lowest key (so the choice is the same wherever it is made). Undefined when
 * no key waits.
 *
 * @example
 * chooseFairKey({
 *   holders: [{ fair: 'a' }, { fair: 'a' }, { fair: 'b' }],
 *   waiting: [{ key: 'a', waiting: 900, since: 1 }, { key: 'b', waiting: 3, since: 5 }],
 *   weightOf: () => 1,
 * }); // 'b': it runs 1 against a's 2
 */
export function chooseFairKey(input: {
  holders: readonly { fair?: string; fairLine?: string }[];
  waiting: readonly FairWaiting[];
  weightOf: (key: string) => number;
}): string | undefined {
  const running = runningByKey(input.holders);
  let best: { key: string; share: number; since: number } | undefined;
  for (const w of input.waiting) {
    if (w.waiting <= 0) continue;
    const weight = input.weightOf(w.key);
    // a weight that is not usable (not a finite number above 0) counts as the default
    const share = (running.get(w.key) ?? 0) / (fairWeightProblem(weight) === undefined ? weight : DEFAULT_FAIR_WEIGHT);
    const better =
      best === undefined ||
      share < best.share ||
      (share === best.share && (w.since < best.since || (w.since === best.since && w.key < best.key)));
    if (better) best = { key: w.key, share, since: w.since };
  }
  return best?.key;
}
