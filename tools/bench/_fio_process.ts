/**
 * The subprocesses and scratch directories of tools/bench/fio_compare.ts: one child
 * at a time stopped on SIGINT/SIGTERM, fio's version, the two scratch
 * directories the comparison writes in, and its error classes.
 *
 * @module
 */

import { join } from "node:path";
import { formatCpuList, parseCpuList } from "../../core/cpu_affinity.ts";

/** Where a case does its I/O. */
export type Place = "disk" | "tmpfs";

/** What every scratch directory of the comparison is named from. */
export const SCRATCH_PREFIX = "tierbench-fio-compare-";

/** An expected failure: printed as one line, exit status 1. */
export class CompareError extends Error {
  override name = "CompareError";
}

/** fio is not installed: the one line says how to install it; exit status 1. */
export class FioMissing extends Error {
  override name = "FioMissing";
}

/** A bad option: printed as one line, exit status 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

/**
 * The integer option `--flag` written as `text`, from `min` to `max`.
 *
 * @throws {UsageError} naming the option and what was written.
 *
 * @example
 * ```ts
 * import { intOption } from "./_fio_process.ts";
 * console.assert(intOption("rounds", "3", 1, 99) === 3);
 * try {
 *   intOption("rounds", "3x", 1, 99);
 * } catch (e) {
 *   console.assert((e as Error).message === '--rounds: "3x" is not an integer from 1 to 99');
 * }
 * ```
 */
export function intOption(flag: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || n < min || n > max) {
    throw new UsageError(`--${flag}: "${text}" is not an integer from ${min} to ${max}`);
  }
  return n;
}

/**
 * `--cpus-allowed` as both tools will read it: a CPU list this host has,
 * written canonically (`0-1`); nothing when the option is absent.
 *
 * @throws {UsageError} naming the option and why the list is refused.
 *
 * @example
 * ```ts
 * import { cpusOption } from "./_fio_process.ts";
 * console.assert(cpusOption("0")?.cpusAllowed === "0");
 * console.assert(cpusOption(undefined).cpusAllowed === undefined);
 * ```
 */
export function cpusOption(text: string | undefined): { cpusAllowed?: string } {
  if (text === undefined) return {};
  try {
    return { cpusAllowed: formatCpuList(parseCpuList(text)) };
  } catch (e) {
    throw new UsageError(`--cpus-allowed: ${(e as Error).message}`);
  }
}

/** A signal stopped the comparison. */
export class Interrupted extends Error {
  override name = "Interrupted";
}

// ---------------------------------------------------------------------------
// Subprocesses and signals

/** Runs one subprocess at a time, and stops it when SIGINT or SIGTERM arrives. */
export class ChildRunner {
  /** The signal that arrived, if one did. */
  reason: string | undefined;
  #child: Deno.ChildProcess | undefined;
  readonly #handlers: [Deno.Signal, () => void][] = [];

  /** Listens for SIGINT and SIGTERM until {@linkcode ChildRunner.uninstall}. */
  install(): void {
    for (const sig of ["SIGINT", "SIGTERM"] as const) {
      const h = () => this.#onSignal(sig);
      Deno.addSignalListener(sig, h);
      this.#handlers.push([sig, h]);
    }
  }

  uninstall(): void {
    for (const [sig, h] of this.#handlers) Deno.removeSignalListener(sig, h);
    this.#handlers.length = 0;
  }

  #onSignal(sig: string): void {
    if (this.reason) {
      console.error(`fio-compare: ${sig} again: still stopping and removing scratch files`);
      return;
    }
    this.reason = sig;
    try {
      // On a terminal the child got the same SIGINT; this covers `kill <pid>`.
      this.#child?.kill("SIGTERM");
    } catch {
      // it has already exited
    }
  }

  /** Throws {@linkcode Interrupted} once a signal has arrived. */
  check(): void {
    if (this.reason) throw new Interrupted(`interrupted by ${this.reason}`);
  }

  /** Runs `cmd` to its end with output captured; throws once a signal arrived. */
  async run(cmd: string, args: string[], cwd?: string): Promise<Deno.CommandOutput> {
    this.check();
    const options: Deno.CommandOptions = {
      args,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    };
    if (cwd !== undefined) options.cwd = cwd;
    const child = new Deno.Command(cmd, options).spawn();
    this.#child = child;
    try {
      return await child.output();
    } finally {
      this.#child = undefined;
      this.check();
    }
  }
}

export const decoder = new TextDecoder();

/** The last non-empty line a failed tool printed, for a one-line error. */
export function lastLine(out: Deno.CommandOutput): string {
  const text = decoder.decode(out.stderr) + "\n" + decoder.decode(out.stdout);
  const lines = text.split("\n").map((l) => l.trim()).filter((l) => l !== "" && l !== "}");
  return lines.findLast((l) => !l.startsWith("{")) ?? `exit status ${out.code}`;
}

/** `fio --version`, or a {@linkcode FioMissing} telling how to install it. */
export async function fioVersion(fio: string): Promise<string> {
  try {
    const out = await new Deno.Command(fio, { args: ["--version"], stdout: "piped" }).output();
    return decoder.decode(out.stdout).trim();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new FioMissing("fio not found: apt-get install -y fio");
    }
    throw e;
  }
}

// ---------------------------------------------------------------------------
// Scratch directories

/** The two directories this tool writes in; nothing outside them is ever removed. */
export class Scratch {
  readonly dirs: Record<Place, string>;

  private constructor(dirs: Record<Place, string>) {
    this.dirs = dirs;
  }

  /** Makes `<dir>/tierbench-fio-compare-<random>` on the disk and on tmpfs. */
  static async create(s: { readonly dir: string; readonly tmpfsDir: string }): Promise<Scratch> {
    const name = SCRATCH_PREFIX + crypto.randomUUID().slice(0, 8);
    const disk = join(s.dir, name);
    const tmpfs = join(s.tmpfsDir, name);
    await mkdirFresh(disk);
    try {
      await mkdirFresh(tmpfs);
    } catch (e) {
      Deno.removeSync(disk, { recursive: true });
      throw e;
    }
    return new Scratch({ disk, tmpfs });
  }

  /** A path inside the scratch directory of `place`. */
  path(place: Place, name: string): string {
    return join(this.dirs[place], name);
  }

  /** Removes a file this tool (or fio, for it) made inside a scratch directory. */
  async removeFile(place: Place, name: string): Promise<void> {
    await Deno.remove(this.path(place, name)).catch((e) => {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    });
  }

  /** Removes both scratch directories and everything in them. */
  removeSync(): void {
    for (const dir of Object.values(this.dirs)) {
      try {
        Deno.removeSync(dir, { recursive: true });
      } catch (e) {
        if (!(e instanceof Deno.errors.NotFound)) {
          console.error(`fio-compare: could not remove ${dir}: ${(e as Error).message}`);
        }
      }
    }
  }
}

export async function mkdirFresh(dir: string): Promise<void> {
  try {
    await Deno.mkdir(dir, { mode: 0o700 });
  } catch (e) {
    throw new CompareError(`cannot create ${dir}: ${(e as Error).message}`);
  }
}

export async function checkDir(flag: string, dir: string): Promise<void> {
  const info = await Deno.stat(dir).catch(() => undefined);
  if (!info?.isDirectory) {
    throw new UsageError(`--${flag}: ${dir} is not an existing directory`);
  }
}

// ---------------------------------------------------------------------------
// Measuring
