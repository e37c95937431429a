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
 * eval "$(deno run -A tools/ceph/main.ts up)"   # prints only `export …` lines
 * deno run -A tools/ceph/main.ts status
 * deno run -A tools/ceph/main.ts env
 * deno run -A tools/ceph/main.ts down           # stops everything, removes the directory
 * ```
 *
 * Ports are fixed (3300, 6789, 6800–7300, 7480): one cluster per machine.
 * Exit status: 0 success, 1 failure (or, for `env` and `status`, no cluster
 * up), 2 a usage error.
 *
 * @module
 */

import { Command, CommanderError, Option } from "@commander-js/extra-typings";
import { cephDown, cephEnv, cephStatus, cephUp, exportLines } from "./cluster.ts";
import { DEFAULT_CEPH_DIR, layout, resolveDir } from "./config.ts";
import { message } from "./_process.ts";

/** Exit status for usage errors. */
const EXIT_USAGE = 2;

/** Runs the command line; resolves to the exit status. */
export async function main(args: string[]): Promise<number> {
  let status = 0;
  const program = new Command()
    .name("deno run -A tools/ceph/main.ts")
    .usage("<up|down|env|status> [--dir DIR] [--mgr] [--no-fs]")
    .description("Starts and stops a single-node Ceph cluster on loopback (S3 and CephFS).")
    .option("--dir <DIR>", `state directory (default $TIERBENCH_CEPH_DIR or ${DEFAULT_CEPH_DIR})`)
    .option("--mgr", "also run a ceph-mgr (--no-mgr, the default, runs none)")
    .addOption(new Option("--no-mgr").hideHelp())
    .addOption(new Option("--fs").hideHelp())
    .option("--no-fs", "no MDS, CephFS or ceph-fuse mount (--fs, the default, has them)")
    .configureHelp({ helpWidth: 100, showGlobalOptions: true })
    .exitOverride()
    .configureOutput({ writeErr: () => {}, outputError: () => {} });
  const dirOption = () => {
    const dir = program.opts().dir;
    return dir === undefined ? {} : { dir };
  };

  program.command("up")
    .description("start the cluster (or find it up) and print export lines for eval")
    .action(async () => {
      const o = program.opts();
      const env = await cephUp({ ...dirOption(), mgr: o.mgr ?? false, fs: o.fs ?? true });
      console.log(exportLines(env));
    });
  program.command("down")
    .description("unmount, stop every daemon, remove the state directory")
    .action(async () => {
      await cephDown(dirOption());
    });
  program.command("env")
    .description("print the export lines of the running cluster")
    .action(async () => {
      const env = await cephEnv(dirOption());
      if (env) {
        console.log(exportLines(env));
        return;
      }
      const dir = layout(resolveDir(program.opts().dir)).dir;
      console.error(
        `ceph: no cluster is up in ${dir} (start one: deno run -A tools/ceph/main.ts up)`,
      );
      status = 1;
    });
  program.command("status")
    .description("one line per daemon")
    .action(async () => {
      const s = await cephStatus(dirOption());
      if (s === undefined) {
        console.log(`no cluster in ${layout(resolveDir(program.opts().dir)).dir}`);
        status = 1;
        return;
      }
      console.log(s.lines.join("\n"));
      status = s.up ? 0 : 1;
    });

  try {
    await program.parseAsync(args, { from: "user" });
    return status;
  } catch (e) {
    if (!(e instanceof CommanderError)) throw e;
    if (e.exitCode === 0) return 0; // --help
    // "commander.help": no command given (commander would print the help as its error)
    const why = e.code === "commander.help" ? "no command given" : e.message;
    console.error(`ceph: ${why.replace(/^error: /, "")}`);
    console.error(program.helpInformation().trimEnd());
    return EXIT_USAGE;
  }
}

if (import.meta.main) {
  try {
    Deno.exit(await main(Deno.args));
  } catch (e) {
    console.error(`ceph: ${message(e)}`);
    Deno.exit(1);
  }
}
