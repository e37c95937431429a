/**
 * A watchdog that stops a cluster once the process that owns it has exited,
 * with nothing but `sh` and the cluster's state directory: the daemons named
 * by its pid files (and any other process started with its `ceph.conf`), its
 * CephFS mount, the directory itself. Nothing of the source tree is run, so
 * a checkout deleted right after the tests that started the cluster still
 * has it stopped.
 *
 * @module
 */

import { ALL_DAEMONS, FUSE, layout, MDS, MGR, MON, OSD, RGW } from "./config.ts";

/** How long a wave of daemons gets after SIGTERM before SIGKILL, in tenths of a second. */
const GRACE_TENTHS = 50;

/**
 * The shell teardown of the cluster in `$1` (the state directory): unmount,
 * stop the daemons in waves as `tools/services/ceph/main.ts down` does (ceph-fuse;
 * radosgw, the MDS and mgr; the OSD; the monitor), each with SIGTERM then
 * SIGKILL, and remove the directory. The daemons are those the pid files in
 * `run/` name, and any other process, whose command is a Ceph daemon's and
 * whose command line names the cluster's `ceph.conf` (as every daemon's
 * does: a pid reused by another process is never signalled).
 */
export function teardownScript(): string {
  const waves = [[FUSE], [RGW, MDS, MGR], [OSD], [MON]].map((ds) => ds.map((d) => d.bin).join(" "));
  const bins = ALL_DAEMONS.map((d) => d.bin).join(" ");
  return [
    'dir="$1"; conf="$dir/ceph.conf"',
    '[ -d "$dir" ] || return 0',
    // the cluster's processes: pid files first, then whatever else runs with its config
    "ours() {",
    '  { cat "$dir"/run/*.pid 2>/dev/null;',
    '    grep -lsF -e "$conf" /proc/[0-9]*/cmdline | cut -d/ -f3; } | sort -un |',
    "  while read -r pid; do",
    '    comm=$(cat "/proc/$pid/comm" 2>/dev/null) || continue',
    `    case " ${bins} " in *" $comm "*) ;; *) continue ;; esac`,
    // never another process that reuses a stale pid: the daemon runs with this config
    '    grep -qsF -e "$conf" "/proc/$pid/cmdline" || continue',
    '    echo "$pid $comm"',
    "  done",
    "}",
    'umount "$dir/mnt" 2>/dev/null || umount -l "$dir/mnt" 2>/dev/null',
    `for wave in ${waves.map((w) => `"${w}"`).join(" ")}; do`,
    '  pids=$(ours | while read -r pid comm; do case " $wave " in *" $comm "*) echo "$pid";; esac; done)',
    '  [ -n "$pids" ] || continue',
    "  kill -TERM $pids 2>/dev/null",
    "  i=0; alive=",
    `  while [ $i -lt ${GRACE_TENTHS} ]; do`,
    '    alive=; for p in $pids; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done',
    '    [ -n "$alive" ] || break',
    "    sleep 0.1; i=$((i + 1))",
    "  done",
    '  [ -n "$alive" ] && kill -KILL $alive 2>/dev/null',
    "done",
    'left=$(ours | cut -d" " -f1); [ -n "$left" ] && kill -KILL $left 2>/dev/null',
    'umount -l "$dir/mnt" 2>/dev/null',
    'rm -rf "$dir"',
  ].join("\n");
}

/** Options of {@linkcode startWatchdog}. */
export interface WatchdogOptions {
  /** The process that owns the cluster: the teardown starts once it has exited. */
  readonly ownerPid: number;
  /** The cluster's state directory. */
  readonly dir: string;
  /** A lock file taken around the teardown (as CI's exit trap takes it), when `flock` exists. */
  readonly lock?: string;
  /** A file removed after the teardown (the owner's claim on the cluster). */
  readonly ownerFile?: string;
}

/**
 * Starts the watchdog in a session of its own (it outlives the caller) and
 * returns its pid. Its command line holds the shell script, the owner's pid
 * and the paths of the options: nothing of the source tree.
 *
 * @example
 * ```ts ignore
 * startWatchdog({ ownerPid: Deno.pid, dir: "/tmp/tierbench-ceph-tests" });
 * ```
 */
export function startWatchdog(o: WatchdogOptions): number {
  layout(o.dir); // refuses a directory whose sockets would not fit
  const script = [
    'while kill -0 "$1" 2>/dev/null; do sleep 0.5; done',
    `teardown() {\n${teardownScript()}\n}`,
    'if [ -n "$3" ] && command -v flock >/dev/null; then',
    '  exec 9>>"$3"; flock 9',
    "fi",
    'teardown "$2"',
    '[ -n "$4" ] && rm -f "$4"',
  ].join("\n");
  const child = new Deno.Command("setsid", {
    args: ["sh", "-c", script, "sh", String(o.ownerPid), o.dir, o.lock ?? "", o.ownerFile ?? ""],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  child.unref();
  return child.pid;
}
