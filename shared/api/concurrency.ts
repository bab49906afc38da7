/**
 * Maps `items` with `fn`, at most `limit` calls at a time; results keep the input order.
 * A rejection rejects the whole map (callers that want per-item outcomes catch inside `fn`).
 *
 * @example
 * const pages = await mapWithConcurrency(sources, 16, (source) => index.query({ ... }));
 */
export async function mapWithConcurrency<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return results;
}
