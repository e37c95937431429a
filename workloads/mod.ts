/**
 * The training workloads as pure generators: the model and setup, the op program, the six offloading systems, DeepSpeed's own NVMe checkpoint as a baseline, and their registry.
 *
 * @module
 */
export * from "./common.ts";
export * from "./datastates.ts";
export * from "./deep_optimizer_states.ts";
export * from "./deepspeed_checkpoint.ts";
export * from "./mlp_offload.ts";
export * from "./model.ts";
export * from "./ops.ts";
export * from "./registry.ts";
export * from "./setup.ts";
export * from "./ssdtrain.ts";
export * from "./teraio.ts";
export * from "./zero_infinity.ts";
