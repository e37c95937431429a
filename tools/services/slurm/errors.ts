/**
 * The errors of the Slurm launcher: one class per condition, all
 * {@linkcode SlurmError}s, each with a one-line message that says what to do
 * or which log to read.
 *
 * @module
 */

/** Something about the local Slurm failed. */
export class SlurmError extends Error {
  override name = "SlurmError";
}

/** A binary the launcher runs is not installed. */
export class SlurmNotInstalledError extends SlurmError {
  override name = "SlurmNotInstalledError";
  /** The missing binary. */
  readonly binary: string;
  /** Creates the error for the missing `binary`, naming the command that installs it. */
  constructor(binary: string, install: string) {
    super(`${binary} is not installed; run: ${install}`);
    this.binary = binary;
  }
}

/** The launcher runs as a user other than root (slurmd runs tasks as their owner). */
export class SlurmPermissionError extends SlurmError {
  override name = "SlurmPermissionError";
}

/** A port the cluster listens on is taken already. */
export class SlurmPortInUseError extends SlurmError {
  override name = "SlurmPortInUseError";
  /** The busy ports. */
  readonly ports: readonly number[];
  /** Creates the error for the busy `ports` of a cluster about to start in `dir`. */
  constructor(ports: readonly number[], dir: string) {
    super(
      `${ports.length > 1 ? "ports" : "port"} ${ports.join(", ")} already in use ` +
        "(another Slurm of tierbench?); stop it, e.g. " +
        `\`deno run -A tools/services/slurm/main.ts down --dir DIR\`, before starting one in ${dir}`,
    );
    this.ports = ports;
  }
}

/** A daemon failed to start, exited while starting, or never became ready. */
export class SlurmStartError extends SlurmError {
  override name = "SlurmStartError";
  /** The daemon: `munged`, `slurmctld` or `slurmd`. */
  readonly daemon: string;
  /** The last lines of its log (empty when it wrote none). */
  readonly logTail: string;
  /** Creates the error: `what` happened to `daemon`, whose log `log` ends with `logTail`. */
  constructor(daemon: string, what: string, log: string, logTail: string) {
    const tail = logTail === "" ? "its log is empty" : `its log ends:\n${logTail}`;
    super(`${daemon} ${what}; see ${log}; ${tail}`);
    this.daemon = daemon;
    this.logTail = logTail;
  }
}

/** Processes of the cluster are still there after stopping it with SIGKILL. */
export class SlurmStopError extends SlurmError {
  override name = "SlurmStopError";
  /** The processes left, `slurmd (pid 123)` … */
  readonly left: readonly string[];
  /** Creates the error for the processes `left` of the cluster in `dir`. */
  constructor(left: readonly string[], dir: string) {
    super(`${left.join(", ")} of the cluster in ${dir} still running after SIGKILL`);
    this.left = left;
  }
}
