/**
 * fsync(2) of a file off the calling thread: what a stream that persists
 * each object it writes (DataStates-LLM's pwrite handler) does after the
 * write, while the rank's other streams keep going.
 *
 * @module
 */

import { cString, libc, O } from "../core/libc.ts";
import { callFailed } from "./_stream.ts";

const pooled = Deno.dlopen("libc.so.6", {
  fsync: { parameters: ["i32"], result: "i32", nonblocking: true },
}).symbols;

/**
 * fsync(2) of the file at `path`, on Deno's blocking pool. A failure is
 * retried on this thread, where errno can be read, and thrown as an
 * `IoError` naming `fsync` (or `open`).
 *
 * @example
 * ```ts
 * import { syncFile } from "./file_sync.ts";
 * const path = await Deno.makeTempFile();
 * await Deno.writeTextFile(path, "x");
 * await syncFile(path);
 * await Deno.remove(path);
 * ```
 */
export async function syncFile(path: string): Promise<void> {
  const c = libc();
  const fd = c.open(cString(path), O.WRONLY | O.CLOEXEC, 0);
  if (fd < 0) throw callFailed("open", path);
  try {
    if (await pooled.fsync(fd) !== 0 && c.fsync(fd) !== 0) throw callFailed("fsync", path);
  } finally {
    c.close(fd);
  }
}
