/**
 * The command line of the Slurm launcher: starts and stops a real
 * single-node Slurm (munged, slurmctld, slurmd) on loopback for tests and
 * demos. Everything (slurm.conf, munge key and socket, state, spool, pid
 * files, logs) lives in one scratch directory, `/tmp/tierbench-slurm` unless
 * `--dir` or `$TIERBENCH_SLURM_DIR` says otherwise. Needs root and the
 * Debian packages of `SLURM_PACKAGES`.
 *
 * ```sh
 * eval "$(deno run -A tools/services/slurm/main.ts up)"   # prints only the `export SLURM_CONF=…` line
 * srun -n 3 --overcommit hostname
 * deno run -A tools/services/slurm/main.ts status
 * deno run -A tools/services/slurm/main.ts down           # stops everything, removes the directory
 * ```
 *
 * Ports are fixed (16817, 16818): one cluster per machine. Exit status: 0
 * success, 1 failure (or, for `status`, no cluster up), 2 a usage error.
 *
 * @module
 */

import { exportLines, slurmDown, slurmStatus, slurmUp } from "./cluster.ts";
import { DEFAULT_SLURM_DIR, layout, resolveDir } from "./config.ts";
import { dirOption, runMain, runService } from "../service/cli.ts";

/** Runs the command line; resolves to the exit status. */
export function main(args: string[]): Promise<number> {
  return runService(
    {
      name: "slurm",
      script: "deno run -A tools/services/slurm/main.ts",
      usage: "<up|down|status> [--dir DIR]",
      description: "Starts and stops a single-node Slurm (munged, slurmctld, slurmd) on loopback.",
      dirHelp: `scratch directory (default $TIERBENCH_SLURM_DIR or ${DEFAULT_SLURM_DIR})`,
      statusHelp: "one line per daemon and one for the node",
      status: slurmStatus,
      dirOf: (dir) => layout(resolveDir(dir)).dir,
    },
    args,
    (program) => {
      program.command("up")
        .description("start the cluster (or find it up) and print the export line for eval")
        .action(async () => {
          console.log(exportLines(await slurmUp(dirOption(program))));
        });
      program.command("down")
        .description("stop every daemon and job step, remove the scratch directory")
        .action(async () => {
          await slurmDown(dirOption(program));
        });
    },
  );
}

if (import.meta.main) await runMain("slurm", main);
