/**
 * `tierbench trace import strace|iolog FILE`: an strace log (made with
 * `strace -f -tt -T`, gzipped or not) or a fio iolog (version 2 or 3) into
 * a trace; `tierbench trace export iolog TRACE`: a trace into a fio iolog
 * (version 3, or 2) that fio's `read_iolog` replays.
 *
 * @module
 */

import { basename } from "node:path";
import { Command, Option } from "@commander-js/extra-typings";
import { convertTrace, importStrace, type ImportSummary } from "../trace/import.ts";
import { exportIolog } from "../trace/export.ts";
import { resolvePath } from "./_paths.ts";

/** The default name of an import's trace: the input's name, `.trace.gz` in place of its ending. */
export function defaultTraceName(input: string): string {
  const name = basename(input).replace(/\.gz$/, "").replace(/\.(txt|log|strace|iolog)$/, "");
  return resolvePath(`${name}.trace.gz`);
}

function report(s: ImportSummary, what: string): void {
  console.log(`${s.output}: ${s.records} records from ${s.calls} ${what}`);
  for (const n of s.notes) console.log(`note: ${n}`);
}

/** `trace import`. */
export function traceImportCommand() {
  const cmd = new Command("import").description(
    "turn an strace log (strace -f -tt -T) or a fio iolog into a trace",
  );
  cmd.command("strace")
    .description("an strace log, plain or gzipped, made with strace -f -tt -T")
    .argument("<file>", "the strace log")
    .option("--output <trace>", "the trace to write (default <file's name>.trace.gz here)")
    .option("--only <prefix>", "keep only files whose path starts with this")
    .action(async (file, o) => {
      const input = resolvePath(file);
      const output = o.output === undefined ? defaultTraceName(input) : resolvePath(o.output);
      report(await importStrace(input, output, { only: o.only }), "system calls");
    });
  cmd.command("iolog")
    .description("a fio iolog (version 2 or 3, as fio's write_iolog writes it)")
    .argument("<file>", "the iolog")
    .option("--output <trace>", "the trace to write (default <file's name>.trace.gz here)")
    .action(async (file, o) => {
      const input = resolvePath(file);
      const output = o.output === undefined ? defaultTraceName(input) : resolvePath(o.output);
      report(await convertTrace(input, output), "iolog entries");
    });
  return cmd;
}

/** `trace export`. */
export function traceExportCommand() {
  const cmd = new Command("export").description("write a trace in another tool's format");
  cmd.command("iolog")
    .description("a fio iolog for fio's read_iolog; every thread's I/O in one log")
    .argument("<trace>", "a trace")
    .requiredOption("--output <file>", "the iolog to write")
    .addOption(
      new Option("--iolog-version <n>", "3: µs before each line; 2: wait lines in whole ms")
        .choices(["2", "3"] as const).default("3" as const),
    )
    .action(async (trace, o) => {
      const version = o.iologVersion === "2" ? 2 : 3;
      const s = await exportIolog(resolvePath(trace), resolvePath(o.output), version);
      console.log(`${s.output}: ${s.lines} iolog lines from ${s.events} events`);
      for (const n of s.notes) console.log(`note: ${n}`);
    });
  return cmd;
}
