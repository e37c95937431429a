/**
 * Which launcher started this process, read from its environment:
 * {@linkcode detectLaunch}.
 *
 * @module
 */

import { InputError } from "../core/errors.ts";
import { expandNodeList } from "./_nodelist.ts";
import type { LaunchInfo } from "./types.ts";

type Env = Readonly<Record<string, string | undefined>>;

/** The integer in `env[name]`, checked to lie in [min, max]. */
function int(env: Env, name: string, min: number, max: number, what: string): number {
  const raw = env[name];
  if (raw === undefined || raw === "") {
    throw new InputError(name, `is not set: it must be ${what}`);
  }
  if (!/^\s*\d+\s*$/.test(raw)) {
    throw new InputError(name, `must be ${what}, got "${raw}"`);
  }
  const n = Number(raw);
  if (n < min || n > max) throw new InputError(name, `must be ${what}, got ${n}`);
  return n;
}

/** The hosts of the Slurm node list in `env[name]`, refused naming the variable. */
function nodeList(env: Env, name: string): string[] {
  try {
    return expandNodeList(env[name] ?? "");
  } catch (e) {
    const why = (e as Error).message.replace(`bad node list "${env[name]}": `, "")
      .replace("bad node list: ", "");
    throw new InputError(
      name,
      `"${env[name]}" is not a Slurm node list: ${why}`,
      "host names and ranges such as node[01-04,07],login1",
      { cause: e },
    );
  }
}

/** rank, size and local rank from three variables, each checked against the size. */
function ranks(env: Env, rank: string, size: string, local: string | undefined) {
  const n = int(env, size, 1, 1 << 30, "an integer of at least 1");
  const within = `an integer from 0 to ${n - 1} (${size} is ${n})`;
  return {
    rank: int(env, rank, 0, n - 1, within),
    size: n,
    localRank: local === undefined || env[local] === undefined
      ? 0
      : int(env, local, 0, n - 1, within),
  };
}

/** A port derived from a Slurm job and step: the same on every task of the step. */
function slurmPort(env: Env): number {
  const job = int(env, "SLURM_JOB_ID", 0, Number.MAX_SAFE_INTEGER, "a job id (an integer)");
  const stepRaw = env["SLURM_STEP_ID"];
  const step = stepRaw !== undefined && /^\d+$/.test(stepRaw) ? Number(stepRaw) : 0;
  return 20000 + (job * 101 + step) % 10000;
}

/**
 * The launcher's view of this process. Looked for in this order: Open MPI
 * (`OMPI_COMM_WORLD_*`), MPICH/Hydra (`PMI_RANK`, `PMI_SIZE`,
 * `MPI_LOCALRANKID`), srun with PMIx (`PMIX_RANK` with `SLURM_PROCID`), plain
 * Slurm (`SLURM_PROCID`, `SLURM_NTASKS`, `SLURM_LOCALID`, the step's node
 * list: TCP to its first host on `TIERBENCH_PORT` or a port derived from the
 * job and step ids, 20000–29999), torchrun-style (`WORLD_SIZE`, `RANK`,
 * `LOCAL_RANK`, `MASTER_ADDR`, `MASTER_PORT`), else a single process.
 *
 * `node` is the host name, or `<host>#<rank>` with `TIERBENCH_NODE_PER_RANK=1`
 * (every process counts as a node of its own, how tests run N nodes on one
 * machine).
 *
 * @throws {InputError} naming the variable: one is not an integer, a rank
 * is not below the size, a port is out of range, a node list does not parse,
 * or one the launcher needs is missing (a usage error: exit status 2).
 *
 * @example
 * ```ts
 * import { detectLaunch } from "./launch.ts";
 * const info = detectLaunch({
 *   RANK: "1", WORLD_SIZE: "3", LOCAL_RANK: "1", MASTER_ADDR: "127.0.0.1", MASTER_PORT: "29500",
 * });
 * console.assert(info.launcher === "torchrun" && info.rank === 1 && info.address?.port === 29500);
 * console.assert(detectLaunch({}).transport === "single");
 * ```
 */
export function detectLaunch(env: Env = Deno.env.toObject()): LaunchInfo {
  const host = Deno.hostname();
  const nodeOf = (rank: number) =>
    env["TIERBENCH_NODE_PER_RANK"] === "1" ? `${host}#${rank}` : host;
  const has = (name: string) => env[name] !== undefined && env[name] !== "";

  if (has("OMPI_COMM_WORLD_RANK") || has("OMPI_COMM_WORLD_SIZE")) {
    const r = ranks(
      env,
      "OMPI_COMM_WORLD_RANK",
      "OMPI_COMM_WORLD_SIZE",
      "OMPI_COMM_WORLD_LOCAL_RANK",
    );
    return { launcher: "openmpi", transport: "mpi", ...r, node: nodeOf(r.rank) };
  }
  if (has("PMI_RANK") || has("PMI_SIZE")) {
    if (has("SLURM_PROCID") && !has("PMI_SIZE")) {
      // srun --mpi=pmi2 sets PMI_RANK but not PMI_SIZE: Slurm's own variables hold the size.
      const r = ranks(env, "PMI_RANK", "SLURM_NTASKS", "SLURM_LOCALID");
      return { launcher: "slurm", transport: "mpi", ...r, node: nodeOf(r.rank) };
    }
    const r = ranks(env, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID");
    return { launcher: "mpich", transport: "mpi", ...r, node: nodeOf(r.rank) };
  }
  if (has("SLURM_PROCID")) {
    const r = ranks(env, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID");
    if (has("PMIX_RANK")) {
      return { launcher: "slurm", transport: "mpi", ...r, node: nodeOf(r.rank) };
    }
    const listVar = has("SLURM_STEP_NODELIST") ? "SLURM_STEP_NODELIST" : "SLURM_JOB_NODELIST";
    if (!has(listVar)) {
      throw new InputError(
        "SLURM_STEP_NODELIST",
        "and SLURM_JOB_NODELIST are not set: one must list the step's nodes",
      );
    }
    const first = nodeList(env, listVar)[0];
    if (first === undefined) {
      throw new InputError(listVar, `"${env[listVar]}" lists no host`);
    }
    const port = has("TIERBENCH_PORT")
      ? int(env, "TIERBENCH_PORT", 1, 65535, "a TCP port from 1 to 65535")
      : slurmPort(env);
    return {
      launcher: "slurm",
      transport: "tcp",
      ...r,
      node: nodeOf(r.rank),
      address: { host: first, port },
    };
  }
  if (has("WORLD_SIZE") || has("MASTER_PORT")) {
    const r = ranks(env, "RANK", "WORLD_SIZE", "LOCAL_RANK");
    if (!has("MASTER_ADDR")) {
      throw new InputError(
        "MASTER_ADDR",
        "is not set: it must name rank 0's host (torchrun-style)",
      );
    }
    const port = int(env, "MASTER_PORT", 1, 65535, "a TCP port from 1 to 65535");
    return {
      launcher: "torchrun",
      transport: "tcp",
      ...r,
      node: nodeOf(r.rank),
      address: { host: env["MASTER_ADDR"]!, port },
    };
  }
  return { launcher: "none", transport: "single", rank: 0, size: 1, localRank: 0, node: nodeOf(0) };
}
