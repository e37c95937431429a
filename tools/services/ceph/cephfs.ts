/**
 * CephFS through ceph-fuse: mounting it at `DIR/mnt`, finding and removing
 * mounts under the state directory, and stopping and remounting the client
 * for fault tests.
 *
 * @module
 */

import {
  FUSE,
  type Layout,
  layout,
  MDS,
  MON,
  OSD,
  pidFile,
  readState,
  resolveDir,
} from "./config.ts";
import { type CephServiceOptions, pidOf, startDaemon, stopOne, waitUntil } from "./daemons.ts";
import { CephError } from "./errors.ts";
import { readProc, run } from "./_process.ts";

/**
 * Stops ceph-fuse without unmounting: with SIGKILL, as a client crash would,
 * the mount point is left dead (every access fails with ENOTCONN). For fault
 * tests: {@linkcode remountFs} brings the mount back.
 */
export async function stopFuse(options: CephServiceOptions = {}): Promise<void> {
  const l = layout(resolveDir(options.dir));
  await stopOne(l, FUSE, options.signal ?? "SIGKILL");
}

/**
 * Mounts CephFS again after {@linkcode stopFuse} (or any loss of the mount):
 * removes the dead mount, evicts the dead client's session from the MDS (so
 * that the new client is not kept waiting on its capabilities), starts
 * ceph-fuse and waits for the mount.
 */
export async function remountFs(options: { dir?: string } = {}): Promise<void> {
  const l = layout(resolveDir(options.dir));
  const s = await readState(l);
  if (!s?.fs) throw new CephError(`no cluster with a file system in ${l.dir}`);
  if (await pidOf(l, FUSE) !== undefined && (await mountsUnder(l)).includes(l.mnt)) return;
  await stopOne(l, FUSE, "SIGKILL");
  await unmountAll(l);
  await run("ceph", ["-c", l.conf, "--connect-timeout", "10", "tell", "mds.a", "client", "evict"], {
    timeoutMs: 30_000,
  });
  await Deno.remove(pidFile(l, FUSE)).catch(() => {});
  await mountFs(l, () => {});
}

/** Starts ceph-fuse once the MDS is active (it gives up at once otherwise) and waits for the mount. */
export async function mountFs(l: Layout, say: (line: string) => void): Promise<void> {
  await waitUntil(l, "mds.a to become active", MDS, [MON, OSD, MDS], 90_000, async () => {
    const r = await run("ceph", ["-c", l.conf, "--connect-timeout", "10", "mds", "stat"], {
      timeoutMs: 30_000,
    });
    return r.code === 0 && r.stdout.includes("up:active");
  });
  say("mds.a active");
  await startDaemon(l, FUSE, 120_000);
  await waitUntil(l, `ceph-fuse mount at ${l.mnt}`, FUSE, [MON, OSD, MDS], 30_000, async () => {
    return (await mountsUnder(l)).includes(l.mnt);
  });
  say(`CephFS mounted at ${l.mnt}`);
}

/** Mount points at or below the state directory, deepest first. */
export async function mountsUnder(l: Layout): Promise<string[]> {
  const text = await readProc("/proc/mounts");
  return text.split("\n")
    .map((line) => unescapeMount(line.split(" ")[1] ?? ""))
    .filter((m) => m === l.dir || m.startsWith(l.dir + "/"))
    .sort((a, b) => b.length - a.length);
}

/** /proc/mounts writes space, tab, newline and backslash as octal escapes. */
function unescapeMount(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/** Unmounts everything below the directory: umount, then fusermount -u, then a lazy umount. */
export async function unmountAll(l: Layout): Promise<number> {
  const mounts = await mountsUnder(l);
  for (const m of mounts) {
    const attempts: [string, string[]][] = [
      ["umount", [m]],
      ["fusermount3", ["-u", m]],
      ["fusermount", ["-u", m]],
      ["umount", ["-l", m]],
    ];
    for (const [cmd, args] of attempts) {
      const r = await run(cmd, args, { timeoutMs: 30_000 }).catch(() => undefined);
      if (r?.code === 0 || !(await mountsUnder(l)).includes(m)) break;
    }
    if ((await mountsUnder(l)).includes(m)) throw new CephError(`cannot unmount ${m}`);
  }
  return mounts.length;
}
