import type { OrreryClient } from '../client';
import type { Output, Style } from './format';

/** Exit codes of the CLI. */
export const EXIT = {
  ok: 0,
  /** The API answered with an error, or could not be reached. */
  apiError: 1,
  /** Bad command line or configuration (no URL). */
  usage: 2,
  /** `watch`: the job ended failed or cancelled. */
  jobFailed: 3,
  /** `watch --timeout`: the job was not done in time. */
  timeout: 4,
  /** `replay-check`: a journal does not replay on this code. */
  replayDiverged: 5,
} as const;

/** What a command gets to run with. */
export interface CommandContext {
  /** The client; created on first use, so `--help` works without a URL. */
  client(): OrreryClient;
  stdout: Output;
  stderr: Output;
  /** Styles for stdout (colour only on a TTY and without NO_COLOR). */
  style: Style;
  json: boolean;
  env: Record<string, string | undefined>;
  cwd: string;
  readStdin(): Promise<string>;
  now(): number;
  /** Waits between polls (`watch`); tests may shorten it. */
  sleep(ms: number): Promise<void>;
  /** Resolves when a long-running command (`dashboard`) should stop. @default the first SIGINT or SIGTERM */
  untilStopped?: () => Promise<unknown>;
}

export function println(output: Output, text = ''): void {
  output.write(`${text}\n`);
}

export function printJson(output: Output, value: unknown): void {
  output.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Resolves on the first SIGINT or SIGTERM (a long-running command's stop: `orrery dev`, `orrery dashboard`). */
export function untilSignal(): Promise<string> {
  return new Promise((resolve) => {
    const on = (signal: string) => () => {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      resolve(signal);
    };
    const onInt = on('SIGINT');
    const onTerm = on('SIGTERM');
    process.once('SIGINT', onInt);
    process.once('SIGTERM', onTerm);
  });
}
