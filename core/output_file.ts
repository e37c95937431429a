/**
 * Writing what a command produces (results, plans, reports) so that a file
 * a user names is never half-written and never clobbered by a failure: the
 * path is checked before any I/O starts, a complete file goes to a
 * temporary file beside the target and is renamed over it, and partial
 * results of a failed or interrupted run go beside it
 * (`NAME.partial.json`), never over an existing file.
 *
 * @module
 */

import { basename, dirname, join } from "node:path";
import { ConfigError, ioErrorFrom } from "./errors.ts";
import { ACCESS, accessErrno, errnoName, strerror } from "./libc.ts";

/** The nearest existing directory above `path`, or the first ancestor that is not a directory. */
function nearestAncestor(path: string): { dir: string; isDirectory: boolean } {
  let dir = dirname(path);
  for (;;) {
    try {
      return { dir, isDirectory: Deno.statSync(dir).isDirectory };
    } catch (e) {
      // a missing directory is made when the file is written; look further up
      if (!(e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory)) {
        throw e;
      }
    }
    const up = dirname(dir);
    if (up === dir) return { dir, isDirectory: true };
    dir = up;
  }
}

/**
 * Checks, before any I/O, that `path` can be written: it is not a directory,
 * every ancestor that exists is a directory, and the nearest existing one may
 * be written to (directories missing below it are made when the file is
 * written). `option` is how the user gave the path (`output`, `html`), for
 * the message.
 *
 * @throws {ConfigError} naming the option, the path and what is wrong.
 *
 * @example
 * ```ts
 * import { checkOutputPath } from "./output_file.ts";
 * checkOutputPath("/tmp/tierbench-doc-example/out.json"); // fine: /tmp is writable
 * try {
 *   checkOutputPath("/etc/hostname/out.json");
 *   console.assert(false);
 * } catch (e) {
 *   console.assert(String(e).includes("--output: /etc/hostname/out.json: /etc/hostname is not a directory"));
 * }
 * ```
 */
export function checkOutputPath(path: string, option = "output"): void {
  let info: Deno.FileInfo | undefined;
  try {
    info = Deno.statSync(path);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory)) {
      throw new ConfigError(option, `${path}: cannot be checked (${(e as Error).name})`);
    }
  }
  if (info?.isDirectory) {
    throw new ConfigError(option, `${path} is a directory: name a file to write`);
  }
  const { dir, isDirectory } = nearestAncestor(path);
  if (!isDirectory) {
    throw new ConfigError(option, `${path}: ${dir} is not a directory`, "a path in a directory");
  }
  const errno = accessErrno(dir, ACCESS.W_OK | ACCESS.X_OK);
  if (errno !== 0) {
    throw new ConfigError(
      option,
      `${path}: ${dir} cannot be written to (${errnoName(errno)}: ${strerror(errno)})`,
      "a path in a directory you may write to",
    );
  }
}

/**
 * Where the partial results of a failed or interrupted run go: beside
 * `path`, `NAME.partial.json` for `NAME.json` (`NAME.partial` otherwise).
 *
 * @example
 * ```ts
 * import { partialPathOf } from "./output_file.ts";
 * console.assert(partialPathOf("results/r.json") === "results/r.partial.json");
 * console.assert(partialPathOf("out.txt") === "out.txt.partial");
 * ```
 */
export function partialPathOf(path: string): string {
  return path.endsWith(".json") ? `${path.slice(0, -5)}.partial.json` : `${path}.partial`;
}

/** A temporary name beside `path`, hidden, unique to this process and call. */
function temporaryBeside(path: string): string {
  const tag = `${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`;
  return join(dirname(path), `.${basename(path)}.${tag}.tmp`);
}

/** Writes `text` to a temporary file beside `path` (its directory made first); returns its name. */
async function writeTemporary(path: string, text: string): Promise<string> {
  const dir = dirname(path);
  try {
    await Deno.mkdir(dir, { recursive: true });
  } catch (e) {
    throw ioErrorFrom(e, "mkdir", dir);
  }
  const tmp = temporaryBeside(path);
  try {
    await Deno.writeTextFile(tmp, text, { createNew: true });
  } catch (e) {
    await Deno.remove(tmp).catch(() => {});
    throw ioErrorFrom(e, "write", tmp);
  }
  return tmp;
}

/**
 * Writes `text` to `path` atomically: into a temporary file beside it, then
 * renamed over it, so `path` holds the old content or the whole new one,
 * never a part. Directories missing above it are made.
 *
 * @throws {IoError} naming the call and file when the file system refuses.
 *
 * @example
 * ```ts
 * import { writeFileAtomic } from "./output_file.ts";
 * const dir = await Deno.makeTempDir();
 * await writeFileAtomic(`${dir}/a/b.json`, "{}\n");
 * console.assert(await Deno.readTextFile(`${dir}/a/b.json`) === "{}\n");
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function writeFileAtomic(path: string, text: string): Promise<void> {
  const tmp = await writeTemporary(path, text);
  try {
    await Deno.rename(tmp, path);
  } catch (e) {
    await Deno.remove(tmp).catch(() => {});
    throw ioErrorFrom(e, "rename", path);
  }
}

/**
 * Writes `text` to `path` only if no file is there, else to the first of
 * `NAME-2.EXT`, `NAME-3.EXT`, … that is free; never replaces a file. The
 * whole file appears at once (written beside, then linked into place).
 * Returns the path written.
 *
 * @throws {IoError} naming the call and file when the file system refuses.
 *
 * @example
 * ```ts
 * import { writeFileNew } from "./output_file.ts";
 * const dir = await Deno.makeTempDir();
 * console.assert(await writeFileNew(`${dir}/r.partial.json`, "1") === `${dir}/r.partial.json`);
 * console.assert(await writeFileNew(`${dir}/r.partial.json`, "2") === `${dir}/r.partial-2.json`);
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function writeFileNew(path: string, text: string): Promise<string> {
  const tmp = await writeTemporary(path, text);
  const dot = basename(path).lastIndexOf(".");
  const stem = dot > 0 ? path.slice(0, path.length - basename(path).length + dot) : path;
  const ext = dot > 0 ? basename(path).slice(dot) : "";
  try {
    for (let n = 1;; n++) {
      const candidate = n === 1 ? path : `${stem}-${n}${ext}`;
      try {
        await Deno.link(tmp, candidate); // fails on an existing file: nothing is replaced
        return candidate;
      } catch (e) {
        if (e instanceof Deno.errors.AlreadyExists) continue;
      }
      // a file system without hard links: create the file, still never over another
      try {
        await Deno.writeTextFile(candidate, text, { createNew: true });
        return candidate;
      } catch (e) {
        if (!(e instanceof Deno.errors.AlreadyExists)) throw ioErrorFrom(e, "write", candidate);
      }
    }
  } finally {
    await Deno.remove(tmp).catch(() => {});
  }
}
