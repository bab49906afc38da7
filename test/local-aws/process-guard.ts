import type { ChildProcess } from 'node:child_process';

/**
 * Kills tracked child processes when this process ends, so an emulator never outlives the
 * test run or `npm run dev` that started it.
 *
 * - `exit`: SIGKILL every tracked child (synchronous, the only thing allowed there).
 * - SIGINT / SIGTERM / SIGHUP: SIGKILL every tracked child, then, if no one else listens for
 *   that signal, re-raise it so the process still dies the default way (adding a listener
 *   would otherwise swallow Ctrl-C).
 *
 * A SIGKILL of this process runs no handler at all; `setpriv --pdeathsig` (see
 * dynamodb-local.ts) covers that case on Linux.
 */
const children = new Set<ChildProcess>();
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
let installed = false;

function killAll(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  children.clear();
}

function onSignal(signal: NodeJS.Signals): void {
  killAll();
  uninstall();
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
}

function install(): void {
  if (installed) return;
  installed = true;
  process.on('exit', killAll);
  for (const signal of SIGNALS) process.on(signal, onSignal);
}

function uninstall(): void {
  if (!installed) return;
  installed = false;
  process.off('exit', killAll);
  for (const signal of SIGNALS) process.off(signal, onSignal);
}

/**
 * Registers a child to be killed when this process exits or is interrupted.
 *
 * @example
 * const child = spawn('java', args);
 * trackChild(child);
 * child.once('exit', () => untrackChild(child));
 */
export function trackChild(child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => untrackChild(child));
  install();
}

/** Forgets a child (it exited or was stopped); removes the process hooks when none is left. */
export function untrackChild(child: ChildProcess): void {
  children.delete(child);
  if (children.size === 0) uninstall();
}
