/**
 * A FUSE file system for the fault tests (tests/testdata/faultfs.c): a
 * pass-through over a directory on the disk that fails chosen writes with
 * EIO, gives removals or writes no answer, or corrupts a byte read, for real — the kernel passes the error
 * up through pwrite, io_submit and io_uring as a failing device would.
 * Compiled with gcc against libfuse3 into the test's scratch directory,
 * mounted as root, unmounted and removed when disposed.
 *
 * @module
 */

import { join } from "node:path";
import { sh, tempDirOnDisk } from "./_helpers.ts";

const SOURCE = new URL("./testdata/faultfs.c", import.meta.url).pathname;

/** What the file system does wrong. */
export interface FaultFsOptions {
  /** A write whose bytes cover this offset fails with EIO, each time it is tried. */
  readonly eioWriteAt?: number;
  /** How many writes pass before that (default 0). */
  readonly eioAfter?: number;
  /**
   * unlink and rmdir get no answer, as from a hung network file system,
   * until {@linkcode FaultFs.answerAgain} (a caller that exits meanwhile is
   * let go: they end with EINTR).
   */
  readonly hangRemove?: boolean;
  /** Every write once this many went by gets no answer, the same way. */
  readonly hangWritesAfter?: number;
  /** A read covering this offset returns the byte there inverted (the file is intact). */
  readonly flipReadAt?: number;
}

/** A mounted faultfs. */
export interface FaultFs extends AsyncDisposable {
  /** The mount point: work here. */
  readonly path: string;
  /** The directory underneath, where the files really are. */
  readonly backing: string;
  /** Answers removals and writes again, those that waited first. */
  answerAgain(): void;
}

/** Compiles faultfs into `dir`; returns the binary. */
async function build(dir: string): Promise<string> {
  const bin = join(dir, "faultfs");
  const flags = await sh("pkg-config", ["--cflags", "--libs", "fuse3"]);
  if (flags.code !== 0) throw new Error(`pkg-config fuse3: ${flags.out.trim()}`);
  const cc = await sh("gcc", [
    ...["-O2", "-Wall", "-Wextra", "-o", bin, SOURCE],
    ...flags.out.trim().split(/\s+/),
  ]);
  if (cc.code !== 0) throw new Error(`gcc faultfs.c: ${cc.out.trim()}`);
  return bin;
}

function mounted(path: string): boolean {
  return Deno.readTextFileSync("/proc/self/mounts").split("\n")
    .some((l) => l.split(" ")[1] === path);
}

/**
 * Builds and mounts faultfs over a fresh directory on the disk. Root,
 * /dev/fuse, gcc, pkg-config and libfuse3-dev (tests/_requirements.ts:
 * "fuse3").
 *
 * @example
 * ```ts ignore
 * await using fs = await faultFs({ eioWriteAt: 1 << 20 });
 * // a run on file:${fs.path} meets EIO writing its second MiB
 * ```
 */
export async function faultFs(o: FaultFsOptions = {}): Promise<FaultFs> {
  const dir = await tempDirOnDisk();
  const backing = join(dir, "backing");
  const path = join(dir, "mnt");
  await Deno.mkdir(backing);
  await Deno.mkdir(path);
  const bin = await build(dir);
  const args = [backing, path];
  if (o.eioWriteAt !== undefined) args.push("--eio-write-at", String(o.eioWriteAt));
  if (o.eioAfter !== undefined) args.push("--eio-after", String(o.eioAfter));
  if (o.hangRemove) args.push("--hang-remove");
  if (o.hangWritesAfter !== undefined) args.push("--hang-writes-after", String(o.hangWritesAfter));
  if (o.flipReadAt !== undefined) args.push("--flip-read-at", String(o.flipReadAt));
  const daemon = new Deno.Command(bin, { args, stdout: "null", stderr: "null" }).spawn();
  const dispose = async () => {
    try {
      daemon.kill("SIGKILL");
    } catch { /* gone already */ }
    await daemon.status;
    // the kernel keeps the mount of a dead daemon until it is unmounted ("not connected")
    if (mounted(path)) await sh("umount", ["-l", path]);
    await Deno.remove(dir, { recursive: true });
  };
  for (let i = 0; !mounted(path); i++) {
    if (i > 200) {
      await dispose();
      throw new Error("faultfs did not mount in 10 s");
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    path,
    backing,
    answerAgain: () => daemon.kill("SIGUSR2"),
    [Symbol.asyncDispose]: dispose,
  };
}
