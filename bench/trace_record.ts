/**
 * A recording: a command run under strace, its output going through a named
 * pipe straight into the importer (trace/import.ts), so a recording of any
 * length takes no disk beside the trace and no more memory than a short one.
 *
 * @module
 */

import { join } from "node:path";
import { cString, libc, O } from "../core/libc.ts";
import { importStrace, type ImportSummary } from "../trace/import.ts";
import { STRACE_CALLS } from "../trace/strace.ts";
import { VERSION } from "./session.ts";

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

/** strace's version line, or an error saying it is not installed. */
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
 * Runs `command` under strace (in `cwd`, default this process's) and
 * writes its trace to `output` (refused if it exists), keeping only files
 * under `only` when given.
 */
export async function recordTrace(
  command: readonly string[],
  output: string,
  only?: string,
  cwd?: string,
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
        ...(cwd === undefined ? {} : { cwd }),
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
