/**
 * Process helpers of the local services (Ceph, Slurm): running commands with
 * a time limit, reading /proc, telling whether a process still lives
 * (zombies and reused pids included), signalling it and waiting for it to
 * exit.
 *
 * @module
 */

import { join } from "node:path";

/** The error a service throws: its own class, made from a one-line message. */
export type ServiceErrorClass = new (message: string, options?: ErrorOptions) => Error;

/** What a finished command printed and how it exited. */
export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** How {@linkcode run} runs a command. */
export interface RunOptions {
  /** Text written to its stdin (none: stdin is /dev/null). */
  stdin?: string;
  env?: Record<string, string>;
  /** Killed after this long (default 60 s). */
  timeoutMs?: number;
  /** The class of what it throws (default Error). */
  error?: ServiceErrorClass;
}

/**
 * Runs a command to completion with a hard time limit; a missing binary or timeout throws.
 *
 * @example
 * ```ts
 * import { run } from "./process.ts";
 * const r = await run("echo", ["hi"]);
 * if (r.stdout !== "hi\n" || r.code !== 0) throw new Error("echo said something else");
 * ```
 */
export async function run(
  cmd: string,
  args: string[],
  opts: RunOptions = {},
): Promise<RunResult> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const Fail = opts.error ?? Error;
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(cmd, {
      args,
      stdin: opts.stdin === undefined ? "null" : "piped",
      stdout: "piped",
      stderr: "piped",
      ...(opts.env ? { env: opts.env } : {}),
    }).spawn();
  } catch (e) {
    throw new Fail(`cannot run ${cmd}: ${message(e)}`, { cause: e });
  }
  const timer = setTimeout(() => kill(child.pid, "SIGKILL"), timeoutMs);
  try {
    if (opts.stdin !== undefined) {
      const w = child.stdin.getWriter();
      await w.write(new TextEncoder().encode(opts.stdin));
      await w.close();
    }
    const out = await child.output();
    if (out.signal === "SIGKILL") {
      throw new Fail(`${cmd} ${args.join(" ")} timed out after ${timeoutMs / 1000} s`);
    }
    const decoder = new TextDecoder();
    return {
      code: out.code,
      stdout: decoder.decode(out.stdout),
      stderr: decoder.decode(out.stderr),
    };
  } finally {
    clearTimeout(timer);
  }
}

/** Like {@linkcode run} but throws, with the last line of stderr, on a non-zero exit. */
export async function exec(
  cmd: string,
  args: string[],
  what = cmd,
  error: ServiceErrorClass = Error,
): Promise<string> {
  const r = await run(cmd, args, { timeoutMs: 120_000, error });
  if (r.code !== 0) {
    const why = lastLine(r.stderr) ?? lastLine(r.stdout) ?? `exit status ${r.code}`;
    throw new error(`${what} failed: ${why}`);
  }
  return r.stdout;
}

/** False once Deno refused to read /proc itself, which it allows only under --allow-all. */
let procReadable = true;

/** A /proc file's text, "" when it is gone; read through `cat` where Deno may not read /proc. */
export async function readProc(path: string): Promise<string> {
  if (procReadable) {
    try {
      return await Deno.readTextFile(path);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotCapable)) return "";
      procReadable = false;
    }
  }
  const r = await run("cat", [path], { timeoutMs: 10_000 });
  return r.code === 0 ? r.stdout : "";
}

/** What /proc/PID/stat says of a process that matters here. */
export interface ProcStat {
  /** The command name (`comm`), at most 15 characters. */
  comm: string;
  /** One letter: R, S, D, T, Z (zombie), X (dead), … */
  state: string;
  /** The session id. */
  sid: number;
  /** Threads of its thread group, the exited leader of a zombie included. */
  threads: number;
  /** When it started, in clock ticks since boot: with the pid, it names one process. */
  start: string;
}

/** A process's /proc/PID/stat, or undefined when there is no such process. */
export async function procStat(pid: number): Promise<ProcStat | undefined> {
  const stat = await readProc(`/proc/${pid}/stat`);
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

/** A process: its pid and, where known, its start time, which tells it from a later one with the same pid. */
export interface Proc {
  pid: number;
  start?: string;
}

/**
 * Whether a process still exists. A daemon whose main thread has exited
 * shows as a zombie while its other threads finish shutting down (radosgw
 * takes seconds) and still hold its ports and files: alive until they are
 * gone too. A zombie whose threads are all gone is dead, whether or not its
 * parent ever reaps it; so is a process that started after `p` and was
 * given its pid.
 */
export async function alive(p: Proc): Promise<boolean> {
  const s = await procStat(p.pid);
  if (s === undefined || (p.start !== undefined && s.start !== p.start)) return false;
  return running(s);
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

/** Which of `ports` something on this machine listens on (TCP, IPv4 or IPv6). */
export async function busyPorts(ports: readonly number[]): Promise<number[]> {
  const listening = new Set<number>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of (await readProc(table)).split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[3] === "0A") listening.add(parseInt(f[1]?.split(":")[1] ?? "", 16));
    }
  }
  return ports.filter((p) => listening.has(p));
}

/** A process's argv, or undefined when it is gone or a zombie (whose argv is gone). */
export async function processArgv(pid: number): Promise<string[] | undefined> {
  const s = await procStat(pid);
  if (s === undefined || s.state === "Z" || s.state === "X") return undefined;
  const cmdline = await readProc(`/proc/${pid}/cmdline`);
  return cmdline === "" ? undefined : cmdline.replace(/\0$/, "").split("\0");
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

/** The last non-blank line of a text. */
export function lastLine(text: string): string | undefined {
  return text.split("\n").map((s) => s.trim()).filter((s) => s !== "").at(-1);
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

/** Seconds since `t0` (a `performance.now()`), with one decimal. */
export function seconds(t0: number): string {
  return ((performance.now() - t0) / 1000).toFixed(1);
}
