/**
 * Scratch directories: the only places tierbench writes. Each is created
 * fresh (never reused), holds a marker naming its run, and is removed only
 * when the marker is there and names the same run.
 *
 * @module
 */

import { join } from "node:path";
import { TIMED_OUT, withinTimeout } from "../core/settle.ts";

/** The marker file inside every scratch directory. */
export const MARKER = ".tierbench-scratch";
/** Scratch directory names start with this. */
export const SCRATCH_PREFIX = "tierbench-scratch-";

/** What a scratch marker holds (JSON), for directories and S3 prefixes alike. */
export interface ScratchMarker {
  /** The run that made the scratch area. */
  run_id: string;
  /** The host it ran on (absent in markers of older versions). */
  host?: string;
  /** The process that made it. */
  pid?: number;
  /** ISO 8601 time of creation. */
  created?: string;
}

/** A new run id: time plus randomness, sortable. */
export function newRunId(): string {
  const t = new Date().toISOString().replace(/[-:]/g, "").replace(/\..*$/, "");
  const r = crypto.getRandomValues(new Uint8Array(3));
  return `${t}-${Array.from(r, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * Makes `<parent>/tierbench-scratch-<runId>-<tag>` with its marker; the tag
 * (the tier kind) keeps two tiers of one run apart in the same directory.
 * Fails if it exists (so nothing of anyone else's is ever used).
 */
export async function makeScratchDir(parent: string, runId: string, tag: string): Promise<string> {
  const dir = join(parent, `${SCRATCH_PREFIX}${runId}-${tag}`);
  await Deno.mkdir(dir, { mode: 0o700 });
  await Deno.writeTextFile(
    join(dir, MARKER),
    JSON.stringify(
      {
        run_id: runId,
        host: Deno.hostname(),
        pid: Deno.pid,
        created: new Date().toISOString(),
      } satisfies ScratchMarker,
    ) + "\n",
    { createNew: true },
  );
  return dir;
}

/** {@linkcode makeScratchDir}, synchronously (made on first use, from a getter). */
export function makeScratchDirSync(parent: string, runId: string, tag: string): string {
  const dir = join(parent, `${SCRATCH_PREFIX}${runId}-${tag}`);
  Deno.mkdirSync(dir, { mode: 0o700 });
  const marker: ScratchMarker = {
    run_id: runId,
    host: Deno.hostname(),
    pid: Deno.pid,
    created: new Date().toISOString(),
  };
  Deno.writeTextFileSync(join(dir, MARKER), JSON.stringify(marker) + "\n", { createNew: true });
  return dir;
}

/** The marker of a scratch directory; undefined when it has none (or not a readable one). */
export function readScratchMarkerSync(dir: string): ScratchMarker | undefined {
  try {
    const marker = JSON.parse(Deno.readTextFileSync(join(dir, MARKER)));
    return typeof marker?.run_id === "string" ? marker as ScratchMarker : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `dir` is a scratch directory of the run `runId`. */
export function isOurScratchDir(dir: string, runId: string): boolean {
  return readScratchMarkerSync(dir)?.run_id === runId;
}

/**
 * Removes a scratch directory if, and only if, its marker names `runId`.
 * Synchronous, so it can run from a signal handler or `unload`.
 */
export function removeScratchDir(dir: string, runId: string): boolean {
  if (!isOurScratchDir(dir, runId)) return false;
  Deno.removeSync(dir, { recursive: true });
  return true;
}

/** The waits {@linkcode removeSettling} allows in all: 10 + 20 + … + 640 ms. */
const SETTLE_BUDGET_MS = 1270;

/**
 * Removes `dir` and what it holds, trying again while it is "not empty" for
 * up to 1.27 s of waits (10 ms, doubling, 7 tries): a FUSE file system
 * is told of a file's last close only after close() returned, and until then
 * libfuse keeps the unlinked file as `.fuse_hidden…` in the directory (NFS
 * does the same with `.nfs…`), so the first rmdir can find it there; and a
 * writer still running may put a file there during the removal. Any other
 * error, or "not empty" past the budget, is thrown.
 *
 * @example
 * ```ts
 * import { removeSettling } from "./scratch.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/f`, "x");
 * await removeSettling(dir);
 * ```
 */
export async function removeSettling(dir: string): Promise<void> {
  for (let wait = 10, spent = 0;; spent += wait, wait *= 2) {
    try {
      return await Deno.remove(dir, { recursive: true });
    } catch (e) {
      if ((e as { code?: string }).code !== "ENOTEMPTY" || spent + wait > SETTLE_BUDGET_MS) throw e;
    }
    await new Promise((r) => setTimeout(r, wait));
  }
}

/** How {@linkcode removeScratchDirWithin} ended. */
export type Removal = "removed" | "not ours" | "timed out";

/**
 * Removes a scratch directory if, and only if, its marker names `runId`,
 * giving the file system `timeoutMs` for the whole (a hung mount does not
 * hang the caller): "timed out" means it is left as it was, or partly
 * removed, for `tierbench clean`. A directory that is gone is "not ours".
 *
 * @example
 * ```ts
 * import { makeScratchDir, removeScratchDirWithin } from "./scratch.ts";
 * const parent = await Deno.makeTempDir();
 * const dir = await makeScratchDir(parent, "r1", "file");
 * console.assert(await removeScratchDirWithin(dir, "r2", 1000) === "not ours");
 * console.assert(await removeScratchDirWithin(dir, "r1", 1000) === "removed");
 * await Deno.remove(parent);
 * ```
 */
export async function removeScratchDirWithin(
  dir: string,
  runId: string,
  timeoutMs: number,
): Promise<Removal> {
  const removal = (async (): Promise<Removal> => {
    let marker: unknown;
    try {
      marker = JSON.parse(await Deno.readTextFile(join(dir, MARKER)));
    } catch {
      return "not ours";
    }
    if ((marker as ScratchMarker | null)?.run_id !== runId) return "not ours";
    await removeSettling(dir);
    return "removed";
  })();
  const r = await withinTimeout(removal, timeoutMs);
  return r === TIMED_OUT ? "timed out" : r;
}

/**
 * Whether a process with this pid is alive on this machine (a marker's
 * owner, say). A zombie (killed, not yet reaped by its parent) is not.
 */
export function pidAlive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // pid (comm) state …: comm may hold spaces and parentheses, the state follows the last ")"
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}
