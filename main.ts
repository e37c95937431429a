/**
 * The tierbench command line: each subcommand is built in cli/ (one file
 * each) and assembled here.
 *
 * ```sh
 * deno task tierbench run --tier file:/mnt/nvme --rw read --bs 1m --iodepth 8 \
 *   --engine libaio --direct --size 512m --runtime 5 --ramp 1 --output out.json
 * deno task bench            # the node profile
 * deno task tierbench contention --tiers memory:/dev/shm,file:/mnt/nvme
 * ```
 *
 * Exit status: 0 success, 1 the run failed or was interrupted (partial
 * results written), 2 a usage error. Failures print one line, never a stack.
 *
 * @module
 */

import { Command } from "@commander-js/extra-typings";
import { leaveWorkersToExit, VERSION } from "./bench/session.ts";
import {
  benchCommand,
  cleanCommand,
  compareCommand,
  contentionCommand,
  exitOnError,
  planCommand,
  replayCommand,
  reportCommand,
  runCommand,
  sweepCommand,
  traceCommand,
  workloadCommand,
} from "./cli/mod.ts";
import { polishHelp } from "./cli/help_text.ts";

/** The program: its subcommands in the order `--help` lists them. */
function program() {
  const program = new Command()
    .name("tierbench")
    .description("Storage-tier I/O benchmark for LLM training offload")
    .version(VERSION)
    .showHelpAfterError(false)
    .exitOverride()
    .configureOutput({ outputError: () => {} });
  for (
    const command of [
      runCommand(),
      cleanCommand(),
      benchCommand(),
      contentionCommand(),
      sweepCommand(),
      workloadCommand(),
      planCommand(),
      replayCommand(),
      traceCommand(),
      reportCommand(),
      compareCommand(),
    ]
  ) {
    // as program.command() would: errors thrown, not printed, and --help's exit too
    program.addCommand(command.copyInheritedSettings(program));
  }
  polishHelp(program);
  return program;
}

/** Runs the CLI on `args`. */
export async function main(args: string[]): Promise<void> {
  try {
    await program().parseAsync(args, { from: "user" });
  } catch (e) {
    exitOnError(e);
  }
}

if (import.meta.main) {
  // the exit ends the job Workers: tearing each isolate down first cost seconds at 64 jobs
  leaveWorkersToExit();
  await main(Deno.args);
  Deno.exit();
}
