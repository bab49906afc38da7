/**
 * `zod/mini`, for the schemas the worker Lambda loads (its SQS messages, the retry policy): it
 * builds the same schemas as full `zod` from a fraction of its code, and loads that much faster,
 * which is what the worker's cold start pays for. Job payload schemas may use either flavour.
 *
 * Full zod installs its English messages the first time it builds a schema; zod/mini installs
 * none, so without this a process that never builds a full-zod schema (a worker whose payload
 * schema is zod/mini) would report every issue as "Invalid input". job-type.ts loads this
 * module (through backoff.ts) wherever a job type is defined. Same guard as zod's own: a locale
 * set with `z.config()` is kept.
 */
import { en } from 'zod/locales';
import { config } from 'zod/mini';

if (!config().localeError) config(en());

export * from 'zod/mini';
