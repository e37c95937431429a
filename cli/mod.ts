/**
 * The command line's parts: a builder per subcommand, each a commander
 * `Command` with its options and action, and how a failed parse ends the
 * process. `../main.ts` assembles them.
 *
 * @module
 */

export { benchCommand } from "./bench.ts";
export { cleanCommand } from "./clean.ts";
export { compareCommand } from "./compare.ts";
export { contentionCommand } from "./contention.ts";
export { planCommand } from "./plan.ts";
export { replayCommand } from "./replay.ts";
export { reportCommand } from "./report.ts";
export { runCommand } from "./run.ts";
export { sweepCommand } from "./sweep.ts";
export { traceCommand } from "./trace.ts";
export { workloadCommand } from "./workload.ts";
export { EXIT_FAILED, EXIT_USAGE, exitOnError } from "./_exit.ts";
