/**
 * The shapes of a parsed schedule expression, apart from the parser's files
 * (./schedule-expression.ts and the syntax, cron and zone files it is split into), which all use them.
 */
import type { CronSpec } from './schedule-expression-cron';
import type { WallTime } from './schedule-expression-zone';

/** Unit of a `rate()` expression, singular form. */
export type RateUnit = 'minute' | 'hour' | 'day';

/** Raw text of the six fields of an AWS cron expression. */
export interface CronFields {
  minutes: string;
  hours: string;
  dayOfMonth: string;
  month: string;
  dayOfWeek: string;
  year: string;
}

/** A validated schedule expression. `expression` is the original text. */
export type ParsedExpression =
  | { kind: 'at'; expression: string; wallTime: WallTime }
  | { kind: 'rate'; expression: string; value: number; unit: RateUnit; periodMs: number }
  | { kind: 'cron'; expression: string; fields: CronFields; spec: CronSpec };
