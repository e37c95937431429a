/**
 * The command line of the Slurm launcher: starts and stops a real
 * single-node Slurm (munged, slurmctld, slurmd) on loopback for tests and
 * demos. Everything (slurm.conf, munge key and socket, state, spool, pid
 * files, logs) lives in one scratch directory, `/tmp/tierbench-slurm` unless
 * `--dir` or `$TIERBENCH_SLURM_DIR` says otherwise. Needs root and the
 * Debian packages of `SLURM_PACKAGES`.
 *
 * ```sh
 * eval "$(deno run -A tools/slurm/main.ts up)"   # prints only the `export SLURM_CONF=…` line
 * srun -n 3 --overcommit hostname
 * deno run -A tools/slurm/main.ts status
 * deno run -A tools/slurm/main.ts down           # stops everything, removes the directory
 * ```
 *
 * Ports are fixed (16817, 16818): one cluster per machine. Exit status: 0
 * success, 1 failure (or, for `status`, no cluster up), 2 a usage error.
 *
 * @module
 */

import { Command, CommanderError } from "@commander-js/extra-typings";
import { exportLines, slurmDown, slurmStatus, slurmUp } from "./cluster.ts";
import { DEFAULT_SLURM_DIR, layout, resolveDir } from "./config.ts";
import { message } from "./_process.ts";

/** Exit status for usage errors. */
const EXIT_USAGE = 2;

/** Runs the command line; resolves to the exit status. */
export async function main(args: string[]): Promise<number> {
  let status = 0;
  const program = new Command()
    .name("deno run -A tools/slurm/main.ts")
    .usage("<up|down|status> [--dir DIR]")
    .description("Starts and stops a single-node Slurm (munged, slurmctld, slurmd) on loopback.")
    .option(
      "--dir <DIR>",
      `scratch directory (default $TIERBENCH_SLURM_DIR or ${DEFAULT_SLURM_DIR})`,
    )
    .configureHelp({ helpWidth: 100, showGlobalOptions: true })
    .exitOverride()
    .configureOutput({ writeErr: () => {}, outputError: () => {} });
  const dirOption = () => {
    const dir = program.opts().dir;
    return dir === undefined ? {} : { dir };
  };

  program.command("up")
    .description("start the cluster (or find it up) and print the export line for eval")
    .action(async () => {
      console.log(exportLines(await slurmUp(dirOption())));
    });
  program.command("down")
    .description("stop every daemon and job step, remove the scratch directory")
    .action(async () => {
      await slurmDown(dirOption());
    });
  program.command("status")
    .description("one line per daemon and one for the node")
    .action(async () => {
      const s = await slurmStatus(dirOption());
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
    console.error(`slurm: ${why.replace(/^error: /, "")}`);
    console.error(program.helpInformation().trimEnd());
    return EXIT_USAGE;
  }
}

if (import.meta.main) {
  try {
    Deno.exit(await main(Deno.args));
  } catch (e) {
    console.error(`slurm: ${message(e)}`);
    Deno.exit(1);
  }
}
