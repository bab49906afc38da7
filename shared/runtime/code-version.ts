/**
 * The code version a worker writes on each journal entry it records (core/replay.ts), and that a
 * `NondeterminismError` names beside the version that recorded the diverging entry.
 *
 * Why this default: it needs no build step and no configuration. The handler's own source text
 * (`run.toString()`, as bundled) changes whenever its steps are renamed, removed or moved, which
 * is what a replay cares about; the Lambda version (`AWS_LAMBDA_FUNCTION_VERSION`) tells published
 * versions apart when a deployment publishes them (`$LATEST` otherwise). A change in a module the
 * handler calls leaves the hash as it was: the version is there to name code in messages, and the
 * replay check compares calls, not versions, so it catches such a change all the same. A job
 * author who wants release names sets `defineJob(spec, run, { version: 'v42' })`.
 */
import { createHash } from 'node:crypto';
import { lambdaFunctionVersion } from '../config';

/** Longest version text: it rides in every journal entry. */
export const MAX_CODE_VERSION_LENGTH = 64;

/**
 * The version of a job definition's code: its `version` when it has one, else
 * `<Lambda function version>:<12 hex of the SHA-256 of the handler's source>` (`local:` outside Lambda).
 * @default `<AWS_LAMBDA_FUNCTION_VERSION or "local">:<hash of run.toString()>`
 * @example
 * codeVersionOf({ run: async () => 1 }); // 'local:5c2b0e8f1a3d'
 * codeVersionOf({ version: 'v42', run }); // 'v42'
 */
export function codeVersionOf(
  def: { version?: string; run: unknown },
  env?: Record<string, string | undefined>,
): string {
  const known = env === undefined ? cache.get(def) : undefined;
  if (known !== undefined) return known;
  const version = versionOf(def, env);
  if (env === undefined) cache.set(def, version);
  return version;
}

/** Versions by definition: a handler's source is hashed once per container. */
const cache = new WeakMap<object, string>();

function versionOf(def: { version?: string; run: unknown }, env?: Record<string, string | undefined>): string {
  if (def.version !== undefined && def.version !== '') return def.version.slice(0, MAX_CODE_VERSION_LENGTH);
  const source = typeof def.run === 'function' ? def.run.toString() : String(def.run);
  const hash = createHash('sha256').update(source).digest('hex').slice(0, 12);
  return `${lambdaFunctionVersion(env) ?? 'local'}:${hash}`;
}
