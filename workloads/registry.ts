/**
 * The workloads `tierbench workload NAME` knows, by name.
 *
 * @module
 */

import type { WorkloadDefinition } from "./common.ts";
import { datastates } from "./datastates.ts";
import { deepOptimizerStates } from "./deep_optimizer_states.ts";
import { deepspeedCheckpoint } from "./deepspeed_checkpoint.ts";
import { mlpOffload } from "./mlp_offload.ts";
import { ssdtrain } from "./ssdtrain.ts";
import { teraio } from "./teraio.ts";
import { zeroInfinity } from "./zero_infinity.ts";

/** Every workload, in the order `--help` lists them. */
export const WORKLOADS: readonly WorkloadDefinition[] = [
  zeroInfinity,
  mlpOffload,
  deepOptimizerStates,
  ssdtrain,
  teraio,
  datastates,
  deepspeedCheckpoint,
];

/** Names accepted by {@linkcode workloadByName}. */
export const WORKLOAD_NAMES: readonly string[] = WORKLOADS.map((w) => w.name);

/**
 * The workload of this name.
 *
 * @throws {RangeError} naming the workloads when there is none of that name.
 *
 * @example
 * ```ts
 * import { workloadByName } from "./registry.ts";
 * console.assert(workloadByName("zero-infinity").needs.includes("local"));
 * ```
 */
export function workloadByName(name: string): WorkloadDefinition {
  const w = WORKLOADS.find((d) => d.name === name);
  if (!w) {
    throw new RangeError(`workload "${name}" is unknown: use one of ${WORKLOAD_NAMES.join(", ")}`);
  }
  return w;
}
