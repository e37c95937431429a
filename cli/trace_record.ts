/**
 * `tierbench trace record [--output T] [--only PREFIX] -- CMD ARGS…`: runs a
 * command under strace and writes its file I/O as a trace
 * (bench/trace_record.ts).
 *
 * @module
 */

import { join } from "node:path";
import { Command } from "@commander-js/extra-typings";
import { newRunId } from "../tiers/scratch.ts";
import { recordTrace } from "../bench/trace_record.ts";
import { EXIT_FAILED, fail } from "./_exit.ts";
import { resolvePath, userCwd } from "./_paths.ts";

/** `trace record`. */
export function traceRecordCommand() {
  return new Command("record")
    .description("run a command under strace and write its file I/O as a trace")
    .argument("<command...>", "the command and its arguments (after --)")
    .option("--output <trace>", "the trace to write (default results/<host>-<run id>.trace.gz)")
    .option("--only <prefix>", "keep only files whose path starts with this")
    .action(async (command, o) => {
      const output = o.output === undefined
        ? join(userCwd(), "results", `${Deno.hostname()}-${newRunId()}.trace.gz`)
        : resolvePath(o.output);
      const only = o.only === undefined ? undefined : resolvePath(o.only);
      const { summary, code } = await recordTrace(command, output, only, userCwd());
      console.log(
        `${summary.output}: ${summary.records} records from ${summary.calls} system calls`,
      );
      for (const n of summary.notes) console.log(`note: ${n}`);
      if (code !== 0) {
        fail(
          `${command[0]} exited with status ${code}; its trace is in ${summary.output}`,
          EXIT_FAILED,
        );
      }
    });
}
