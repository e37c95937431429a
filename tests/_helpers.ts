/**
 * Test helpers: temporary directories, small mounts (root only), and the CLI
 * as a subprocess.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";

/** The repository root. */
export const ROOT = new URL("..", import.meta.url).pathname;

/** Whether this process runs as root (mount tests need it). */
export const IS_ROOT = Deno.uid() === 0;

/** A fresh temporary directory on the disk (not tmpfs), removed by the caller. */
export async function tempDirOnDisk(): Promise<string> {
  const base = join(ROOT, "results", ".test-tmp");
  await Deno.mkdir(base, { recursive: true });
  return await Deno.makeTempDir({ dir: base, prefix: "t-" });
}

/** Runs `fn` with a fresh temporary directory on the disk, removed afterwards whatever happens. */
export async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await tempDirOnDisk();
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Runs `fn` with a fresh temporary directory in /dev/shm (tmpfs), removed afterwards whatever happens. */
export async function withShmDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ dir: "/dev/shm", prefix: "tierbench-test-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * Runs `fn` with a new directory that every user can enter and read, in the
 * system's temporary directory rather than the checkout (a clone may lie
 * where only its owner can enter, as one under /root does), removed
 * afterwards whatever happens: where a test runs something as another user,
 * it puts a copy of what that user runs there.
 */
export async function withDirForAnyone(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "tierbench-anyone-" });
  try {
    await Deno.chmod(dir, 0o755);
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Runs a command, returns its status and output. */
export async function sh(cmd: string, args: string[]): Promise<{ code: number; out: string }> {
  const r = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  const dec = new TextDecoder();
  return { code: r.code, out: dec.decode(r.stdout) + dec.decode(r.stderr) };
}

/** A mount of `fstype` at a new directory, unmounted and removed when disposed. */
export async function tempMount(fstype: string, options: string): Promise<
  { path: string } & AsyncDisposable
> {
  const path = await tempDirOnDisk();
  const r = await sh("mount", ["-t", fstype, "-o", options, "none", path]);
  if (r.code !== 0) throw new Error(`mount -t ${fstype} failed: ${r.out.trim()}`);
  return {
    path,
    async [Symbol.asyncDispose]() {
      await sh("umount", [path]);
      await Deno.remove(path, { recursive: true });
    },
  };
}

/** The result of a CLI run. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

// As the tierbench task: Deno grants /dev/shm, /proc and /sys only to --allow-all.
const PERMS = ["--allow-all"];

/** Where and how the CLI runs, beyond its arguments (default: as this process). */
export interface CliPlace {
  /** Its working directory, also given as INIT_CWD (where the user stands, as `deno task` says it). */
  readonly cwd?: string;
  /** Environment variables over this process's (NO_COLOR=1 always). */
  readonly env?: Record<string, string>;
  /** Kills it when aborted. */
  readonly signal?: AbortSignal;
}

/** Spawns the CLI (main.ts) with the task's permissions. */
export function spawnCli(args: string[], place: CliPlace = {}): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-q", ...PERMS, join(ROOT, "main.ts"), ...args],
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1", ...(place.cwd ? { INIT_CWD: place.cwd } : {}), ...place.env },
    ...(place.cwd ? { cwd: place.cwd } : {}),
    ...(place.signal ? { signal: place.signal } : {}),
  }).spawn();
}

/** Waits for a spawned CLI to end and decodes what it printed. */
export async function finished(child: Deno.ChildProcess): Promise<CliResult> {
  const out = await child.output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** Runs the CLI to completion. */
export async function runCli(args: string[], place: CliPlace = {}): Promise<CliResult> {
  return await finished(spawnCli(args, place));
}

/** What {@linkcode toolJson} returns: all the tool printed, and the document it wrote. */
export interface ToolJson {
  /** Its stdout, then its stderr. */
  text: string;
  // deno-lint-ignore no-explicit-any
  doc: any;
}

/**
 * Runs a tool, `deno run --allow-all script args… --output output` (with
 * `env` over this process's environment), checks that it exited 0 (all it
 * printed in the failure's message), and returns what it printed and the
 * JSON document it wrote.
 */
export async function toolJson(
  script: string,
  args: string[],
  output: string,
  env: Record<string, string> = {},
): Promise<ToolJson> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", script, ...args, "--output", output],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  const text = dec.decode(out.stdout) + dec.decode(out.stderr);
  assert.equal(out.code, 0, text);
  return { text, doc: JSON.parse(await Deno.readTextFile(output)) };
}

/** Names of scratch directories left in `dir`. */
export async function scratchLeft(dir: string): Promise<string[]> {
  const left: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (e.name.startsWith("tierbench-scratch-")) left.push(e.name);
  }
  return left;
}
