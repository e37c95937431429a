/**
 * `tierbench trace record [--output T] [--only PREFIX] -- CMD ARGS…`: runs a
 * command under strace and writes its file I/O as a trace. strace's output
 * goes through a named pipe straight into the importer, so a recording of
 * any length takes no disk beside the trace and no more memory than a short
 * one.
 *
 * @module
 */

import { join } from "node:path";
import { Command } from "@commander-js/extra-typings";
import { cString, libc, O } from "../core/libc.ts";
import { newRunId } from "../tiers/scratch.ts";
import { importStrace, type ImportSummary } from "../trace/import.ts";
import { STRACE_CALLS } from "../trace/strace.ts";
import { VERSION } from "../bench/session.ts";
import { EXIT_FAILED, fail } from "./_exit.ts";
import { resolvePath, userCwd } from "./_paths.ts";

/** The strace options a recording runs with (the importer's form, with -y paths). */
export function straceArgs(output: string, command: readonly string[]): string[] {
  return [
    "-f", // every thread and child
    "-tt", // wall-clock µs
    "-T", // each call's duration
    "-y", // each descriptor's path
    "-s",
    "64", // strings and arrays (io_submit's iocbs) up to 64 elements
    "-o",
    output,
    "-e",
    // ? : a call this architecture lacks (open, fork on aarch64) is no error
    `trace=${STRACE_CALLS.map((c) => `?${c}`).join(",")}`,
    "--",
    ...command,
  ];
}

/** strace's version line, or a ConfigError saying it is not installed. */
async function straceVersion(): Promise<string> {
  try {
    const out = await new Deno.Command("strace", { args: ["-V"], stdout: "piped", stderr: "null" })
      .output();
    return new TextDecoder().decode(out.stdout).split("\n")[0]!.replace(/ -- version/, "").trim();
  } catch (e) {
    throw new Error("trace record needs strace, which is not installed (apt-get install strace)", {
      cause: e,
    });
  }
}

/** What a recording did. */
export interface Recording {
  readonly summary: ImportSummary;
  /** The command's exit status (strace's, which is the command's). */
  readonly code: number;
}

/**
 * Runs `command` under strace and writes its trace to `output` (refused if
 * it exists), keeping only files under `only` when given.
 */
export async function recordTrace(
  command: readonly string[],
  output: string,
  only?: string,
): Promise<Recording> {
  const tool = await straceVersion();
  const dir = await Deno.makeTempDir({ prefix: "tierbench-record-" });
  const fifo = join(dir, "strace.out");
  const ignore = () => {}; // Ctrl-C reaches the command and strace; the trace keeps what ran
  Deno.addSignalListener("SIGINT", ignore);
  try {
    const mk = await new Deno.Command("mkfifo", { args: [fifo] }).output();
    if (!mk.success) throw new Error(`mkfifo ${fifo} failed`);
    const imported = importStrace(fifo, output, {
      only,
      source: {
        kind: "record",
        command: [...command],
        tool: `${tool}, tierbench ${VERSION}`,
        ...(only ? { only } : {}),
      },
    });
    imported.catch(() => {});
    let code = 127;
    try {
      const child = new Deno.Command("strace", {
        args: straceArgs(fifo, command),
        stdin: "inherit",
        stdout: "inherit",
        stderr: "inherit",
        cwd: userCwd(),
      }).spawn();
      code = (await child.status).code;
    } finally {
      // strace that never opened the pipe (it could not start the command) leaves the reader
      // waiting for a writer: be that writer, and close at once
      // (non-blocking: when the reader is done already, no one is there and it fails, ENXIO)
      const fd = libc().open(cString(fifo), O.WRONLY | O.NONBLOCK | O.CLOEXEC, 0);
      if (fd >= 0) libc().close(fd);
    }
    return { summary: await imported, code };
  } finally {
    Deno.removeSignalListener("SIGINT", ignore);
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

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
      const { summary, code } = await recordTrace(command, output, only);
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
