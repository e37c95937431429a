/**
 * The command line of the Ceph launcher: starts and stops a real single-node
 * Ceph 16.2 cluster on loopback for tests and demos, serving S3 through
 * radosgw on `http://127.0.0.1:7480` and CephFS mounted with ceph-fuse.
 * Everything (config, keyrings, daemon data, pid files, logs, the sparse OSD
 * block file, the mount point) lives in one state directory,
 * `/tmp/tierbench-ceph` unless `--dir` or `$TIERBENCH_CEPH_DIR` says
 * otherwise. Needs root and the Debian packages of `CEPH_PACKAGES`.
 *
 * ```sh
 * eval "$(deno run -A tools/services/ceph/main.ts up)"   # prints only `export …` lines
 * deno run -A tools/services/ceph/main.ts status
 * deno run -A tools/services/ceph/main.ts env
 * deno run -A tools/services/ceph/main.ts down           # stops everything, removes the directory
 * ```
 *
 * Ports are fixed (3300, 6789, 6800–7300, 7480): one cluster per machine.
 * Exit status: 0 success, 1 failure (or, for `env` and `status`, no cluster
 * up), 2 a usage error.
 *
 * @module
 */

import { Option } from "@commander-js/extra-typings";
import { cephDown, cephEnv, cephStatus, cephUp, exportLines } from "./cluster.ts";
import { DEFAULT_CEPH_DIR, layout, resolveDir } from "./config.ts";
import { dirOption, runMain, runService } from "../service/cli.ts";

const dirOf = (dir: string | undefined) => layout(resolveDir(dir)).dir;

/** Runs the command line; resolves to the exit status. */
export function main(args: string[]): Promise<number> {
  return runService(
    {
      name: "ceph",
      script: "deno run -A tools/services/ceph/main.ts",
      usage: "<up|down|env|status> [--dir DIR] [--mgr] [--no-fs]",
      description: "Starts and stops a single-node Ceph cluster on loopback (S3 and CephFS).",
      dirHelp: `state directory (default $TIERBENCH_CEPH_DIR or ${DEFAULT_CEPH_DIR})`,
      statusHelp: "one line per daemon",
      status: cephStatus,
      dirOf,
    },
    args,
    (base, exit) => {
      const program = base
        .option("--mgr", "also run a ceph-mgr (--no-mgr, the default, runs none)")
        .addOption(new Option("--no-mgr").hideHelp())
        .addOption(new Option("--fs").hideHelp())
        .option("--no-fs", "no MDS, CephFS or ceph-fuse mount (--fs, the default, has them)");
      program.command("up")
        .description("start the cluster (or find it up) and print export lines for eval")
        .action(async () => {
          const o = program.opts();
          const env = await cephUp({
            ...dirOption(program),
            mgr: o.mgr ?? false,
            fs: o.fs ?? true,
          });
          console.log(exportLines(env));
        });
      program.command("down")
        .description("unmount, stop every daemon, remove the state directory")
        .action(async () => {
          await cephDown(dirOption(program));
        });
      program.command("env")
        .description("print the export lines of the running cluster")
        .action(async () => {
          const env = await cephEnv(dirOption(program));
          if (env) {
            console.log(exportLines(env));
            return;
          }
          const dir = dirOf(program.opts().dir);
          console.error(
            `ceph: no cluster is up in ${dir} (start one: deno run -A tools/services/ceph/main.ts up)`,
          );
          exit.code = 1;
        });
    },
  );
}

if (import.meta.main) await runMain("ceph", main);
