/**
 * A real single-node Slurm 22.05 on loopback for tests and demos: munged
 * with its own key and socket, slurmctld and slurmd with this machine as the
 * one node (its cores, oversubscribable), everything in one scratch
 * directory. Needs root and the Debian packages of
 * {@linkcode SLURM_PACKAGES}; the command line is `main.ts`.
 *
 * @example
 * ```ts ignore
 * import { slurmDown, slurmUp } from "./mod.ts";
 * const env = await slurmUp({ dir: "/tmp/my-slurm" });
 * await new Deno.Command("srun", { args: ["-n", "3", "--overcommit", "hostname"], env }).output();
 * await slurmDown({ dir: "/tmp/my-slurm" });
 * ```
 *
 * @module
 */

export {
  exportLines,
  slurmDown,
  type SlurmEnv,
  slurmEnv,
  type SlurmOptions,
  type SlurmStatus,
  slurmStatus,
  slurmUp,
} from "./cluster.ts";
export {
  DEFAULT_SLURM_DIR,
  INSTALL_COMMAND,
  PORTS,
  SLURM_PACKAGES,
  SLURM_TEST_DIR,
} from "./config.ts";
export { type SlurmProc, slurmProcesses } from "./daemons.ts";
export {
  SlurmError,
  SlurmNotInstalledError,
  SlurmPermissionError,
  SlurmPortInUseError,
  SlurmStartError,
  SlurmStopError,
} from "./errors.ts";
