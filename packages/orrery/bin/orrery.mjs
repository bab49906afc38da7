#!/usr/bin/env node
// The `orrery` CLI of the installed package (in the repository, `bin/orrery.mjs` at its root runs it).
import { runCli } from '../dist/shared/cli/main.js';

await runCli(process.argv.slice(2), 'package');
