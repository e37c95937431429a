/**
 * Process helpers of the Slurm launcher: running a command with a time
 * limit, reading /proc, telling whether a process (by pid and start time)
 * still lives, signalling it.
 *
 * @module
 */

import { join } from "node:path";
import { SlurmError } from "./errors.ts";

/** What a finished command printed and how it exited. */
export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to completion with a hard time limit; a missing binary or a timeout throws. */
export async function run(
  cmd: string,
  args: string[],
  opts: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<RunResult> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(cmd, {
      args,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      ...(opts.env ? { env: opts.env } : {}),
    }).spawn();
  } catch (e) {
    throw new SlurmError(`cannot run ${cmd}: ${message(e)}`, { cause: e });
  }
  const timer = setTimeout(() => kill(child.pid, "SIGKILL"), timeoutMs);
  try {
    const out = await child.output();
    if (out.signal === "SIGKILL") {
      throw new SlurmError(`${cmd} ${args.join(" ")} timed out after ${timeoutMs / 1000} s`);
    }
    const text = new TextDecoder();
    return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
  } finally {
    clearTimeout(timer);
  }
}

/** A process: its pid and start time (clock ticks since boot), which together name one process. */
export interface Proc {
  pid: number;
  start: string;
}

/** What /proc/PID/stat says of a process that matters here. */
export interface ProcStat {
  /** The command name (`comm`), at most 15 characters. */
  comm: string;
  /** One letter: R, S, D, T, Z (zombie), X (dead), … */
  state: string;
  /** The session id. */
  sid: number;
  /** Threads of its thread group. */
  threads: number;
  /** When it started, in clock ticks since boot. */
  start: string;
}

/** A process's /proc/PID/stat, or undefined when there is no such process. */
export async function procStat(pid: number): Promise<ProcStat | undefined> {
  const stat = await readText(`/proc/${pid}/stat`);
  // The command name, in parentheses, may itself hold spaces and parentheses.
  const open = stat.indexOf("(");
  const close = stat.lastIndexOf(")");
  if (open < 0 || close < 0) return undefined;
  const f = stat.slice(close + 2).split(" ");
  return {
    comm: stat.slice(open + 1, close),
    state: f[0] ?? "",
    sid: Number(f[3] ?? "0"),
    threads: Number(f[17] ?? "0"),
    start: f[19] ?? "",
  };
}

/** Whether a stat is of a process that still runs (a zombie with live threads does). */
export function running(s: ProcStat): boolean {
  return (s.state !== "Z" && s.state !== "X") || s.threads > 1;
}

/** Whether the process still exists: same pid, same start time, not a finished zombie. */
export async function alive(p: Proc): Promise<boolean> {
  const s = await procStat(p.pid);
  return s !== undefined && s.start === p.start && running(s);
}

/** Sends a signal to a pid; a process already gone is no error. */
export function kill(pid: number, sig: Deno.Signal): void {
  try {
    Deno.kill(pid, sig);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
}

/** Sends a signal to a process unless it has exited (and its pid may belong to another now). */
export async function signal(p: Proc, sig: Deno.Signal): Promise<void> {
  if (await alive(p)) kill(p.pid, sig);
}

/** Whether every one of the processes has exited within `timeoutMs`. */
export async function allExited(procs: readonly Proc[], timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  do {
    const states = await Promise.all(procs.map((p) => alive(p)));
    if (!states.includes(true)) return true;
    await sleep(50);
  } while (Date.now() < deadline);
  return false;
}

/** Whether `bin` is an executable file on `$PATH` (or in /usr/sbin, /usr/bin, /sbin). */
export async function onPath(bin: string): Promise<boolean> {
  const dirs = (Deno.env.get("PATH") ?? "").split(":").concat("/usr/sbin", "/usr/bin", "/sbin");
  for (const d of dirs) {
    if (d === "") continue;
    try {
      const st = await Deno.stat(join(d, bin));
      if (st.isFile && ((st.mode ?? 0) & 0o111) !== 0) return true;
    } catch {
      // not in this directory
    }
  }
  return false;
}

/** A file's text, "" when it cannot be read. */
export async function readText(path: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch {
    return "";
  }
}

/** Whether anything (a dangling link too) is at `path`. */
export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

/** The last `n` non-blank lines of a text, joined by newlines. */
export function lastLines(text: string, n: number): string {
  return text.split("\n").map((s) => s.trimEnd()).filter((s) => s !== "").slice(-n).join("\n");
}

/** An error's message, or the thrown value as a string. */
export function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
