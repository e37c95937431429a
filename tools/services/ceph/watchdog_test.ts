import assert from "node:assert/strict";
import { join } from "node:path";
import { startWatchdog } from "./watchdog.ts";
import { needing } from "../../../tests/_requirements.ts";

const ROOT = new URL("../../..", import.meta.url).pathname;

/** The command line of process `pid`, its arguments joined by spaces. */
function cmdline(pid: number): string {
  return Deno.readTextFileSync(`/proc/${pid}/cmdline`).split("\0").join(" ");
}

function alive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

async function until(what: string, done: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) throw new Error(`gave up waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * A stand-in daemon: a shell script named as a Ceph binary (its comm), run
 * with `-c CONF` as the cluster's daemons are; `stubborn` ignores SIGTERM.
 */
async function fakeDaemon(bin: string, name: string, conf: string, stubborn = false) {
  const path = join(bin, name);
  await Deno.writeTextFile(
    path,
    `#!/bin/sh\n${stubborn ? "trap '' TERM\n" : ""}while :; do sleep 0.2; done\n`,
    { mode: 0o755 },
  );
  const child = new Deno.Command(path, {
    args: ["-c", conf],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  return child;
}

Deno.test(needing(["root"], {
  name:
    "the tests' Ceph watchdog stops the cluster from its state directory once its owner exits, running nothing of the checkout",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    // a stand-in cluster: pid files, daemons with its ceph.conf, a mount, in a state directory
    const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "tierbench-wd-" });
    const bin = await Deno.makeTempDir({ prefix: "tierbench-wd-bin-" });
    const other = await Deno.makeTempDir({ prefix: "tierbench-wd-other-" });
    const conf = join(dir, "ceph.conf");
    await Deno.writeTextFile(conf, "[global]\n");
    await Deno.mkdir(join(dir, "run"));
    await Deno.mkdir(join(dir, "mnt"));
    const m = await new Deno.Command("mount", { args: ["-t", "tmpfs", "none", join(dir, "mnt")] })
      .output();
    assert.equal(m.code, 0, new TextDecoder().decode(m.stderr));
    const daemons = [
      await fakeDaemon(bin, "ceph-mon", conf),
      await fakeDaemon(bin, "ceph-osd", conf, true), // SIGKILL after the grace
      await fakeDaemon(bin, "radosgw", conf),
      await fakeDaemon(bin, "ceph-fuse", conf),
    ];
    for (const [i, name] of ["mon.a", "osd.0", "client.rgw.a", "client.admin"].entries()) {
      await Deno.writeTextFile(join(dir, "run", `${name}.pid`), `${daemons[i]!.pid}\n`);
    }
    // a daemon of another cluster, named by a stale pid file of this one: left alone
    const decoy = await fakeDaemon(bin, "ceph-mds", join(other, "ceph.conf"));
    await Deno.writeTextFile(join(dir, "run", "mds.a.pid"), `${decoy.pid}\n`);
    const ownerFile = `${dir}.owner`;
    await Deno.writeTextFile(ownerFile, "owner\n");
    const owner = new Deno.Command("sleep", { args: ["600"], stdin: "null" }).spawn();
    try {
      const watchdog = startWatchdog({
        ownerPid: owner.pid,
        dir,
        lock: `${dir}.lock`,
        ownerFile,
      });
      await until("the watchdog", () => alive(watchdog), 5_000);
      assert.ok(!cmdline(watchdog).includes(ROOT), "the watchdog runs something of the checkout");
      await new Promise((r) => setTimeout(r, 600));
      assert.ok(daemons.every((d) => alive(d.pid)), "stopped before its owner exited");
      owner.kill("SIGKILL");
      await owner.status;
      await until("the state directory's removal", () => !alive(watchdog), 30_000);
      for (const d of daemons) {
        assert.ok(!alive(d.pid), `daemon ${d.pid} still runs`);
        await d.status;
      }
      assert.ok(alive(decoy.pid), "another cluster's daemon was stopped");
      await assert.rejects(Deno.stat(dir), Deno.errors.NotFound);
      await assert.rejects(Deno.stat(ownerFile), Deno.errors.NotFound);
      const mounts = await Deno.readTextFile("/proc/self/mounts");
      assert.ok(!mounts.includes(` ${dir}/mnt `), "the mount is still there");
    } finally {
      try {
        owner.kill("SIGKILL");
      } catch { /* gone */ }
      for (const d of [...daemons, decoy]) {
        try {
          d.kill("SIGKILL");
        } catch { /* gone */ }
      }
      await decoy.status;
      await new Deno.Command("umount", { args: ["-l", join(dir, "mnt")], stderr: "null" }).output();
      for (const p of [dir, bin, other, `${dir}.lock`, ownerFile]) {
        await Deno.remove(p, { recursive: true }).catch(() => {});
      }
    }
  },
}));
