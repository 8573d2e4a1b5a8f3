import { runAdmin } from './run.js';

// The CLI's entry point: everything else is in run.ts, which tests call in-process.
process.exitCode = await runAdmin(process.argv.slice(2), process.env, process);
