/**
 * The runs behind MLP-Offload's published table (mauryaavinash95/MLP-Offload
 * at e181b47b, README.md, "Parsing Results": the output of
 * scripts/parse-res.py over logs/), each with the settings its log printed,
 * or, where the artifact does not store the log, the settings assumed and why.
 *
 * One node, 4 ranks, LLaMA-2 models of its launch script, sub_group_size 1e8,
 * pipeline_read and pipeline_write true, aio 2 MiB × 8 × 4 threads.
 * DeepSpeed ZeRO-3: every subgroup and the gradients on the NVMe.
 * MLP-Offload: dist_opt_ratio 3 over the NVMe and VAST, caching, the
 * gradients kept in host memory.
 *
 * @module
 */

import type { WorkloadOptions } from "../../workloads/common.ts";

/** The published table's model sizes. */
export const ARTIFACT_MODELS = ["40b", "52b", "70b", "100b", "120b"] as const;
/** One of {@linkcode ARTIFACT_MODELS}. */
export type ArtifactModel = (typeof ARTIFACT_MODELS)[number];

/** One approach of one row: its published phases and the settings its log printed. */
export interface ArtifactRun {
  /** Published UPDATE, s (the mean over the run's iterations but the first). */
  readonly update_s: number;
  /** Published Elapsed (one iteration), s. */
  readonly elapsed_s: number;
  /** The workload options of tierbench's generator for this run. */
  readonly options: WorkloadOptions;
  /** Where the settings come from: the log's printed lines, or an assumption and why. */
  readonly settings: string;
}

/** A row of the published table. */
export interface ArtifactRow {
  readonly zero3: ArtifactRun;
  readonly mlp_offload: ArtifactRun;
}

const LOG = (size: string, mlp: boolean) =>
  `logs/log-${size}-…-${
    mlp ? "opt_ratio3-cache1-skip_grads1-single_proc1-compress0-tmp-vast" : "opt_ratio0-…-tmp"
  }.log`;
/** ZeRO-3 as its runs set it: the pipelined swapper, aio 2 MiB × 8 × 4 threads. */
const ZERO3 = { pipeline: true, threads: 4, bs: 2 << 20, iodepth: 8 } as const;
/** MLP-Offload as its runs set it (its generator's defaults: 2 MiB × 8 × 4 threads). */
const MLP = { distOptRatio: 3 } as const;

const zero3 = (update_s: number, elapsed_s: number, bufferCount: number, settings: string) => ({
  update_s,
  elapsed_s,
  options: { ...ZERO3, bufferCount },
  settings,
});
const mlp = (
  update_s: number,
  elapsed_s: number,
  bufferCount: number,
  oneAtTime: boolean,
  settings: string,
) => ({
  update_s,
  elapsed_s,
  options: { ...MLP, bufferCount, locks: oneAtTime ? "remote" as const : "none" as const },
  settings,
});

/** The published table (README.md at e181b47), s, with each run's settings. */
export const ARTIFACT_RUNS: Readonly<Record<ArtifactModel, ArtifactRow>> = {
  "40b": {
    zero3: zero3(213.61043, 242.2806, 64, `buffer_count 64 (${LOG("40B", false)})`),
    mlp_offload: mlp(
      98.50729,
      101.7173,
      32,
      true,
      "log not stored in the artifact: buffer_count 32 assumed (scripts/launch-expt.sh runs 40B with BC=32, and every logged MLP-Offload run has half its ZeRO-3 run's), one-at-time as its file name says (single_proc1)",
    ),
  },
  "52b": {
    zero3: zero3(209.3361, 238.5976, 56, `buffer_count 56 (${LOG("52B", false)})`),
    mlp_offload: mlp(
      89.40741,
      92.173,
      28,
      true,
      `buffer_count 28, dist_opt_one_at_time 1 (${LOG("52B", true)})`,
    ),
  },
  "70b": {
    zero3: zero3(336.42677, 370.5621, 50, `buffer_count 50 (${LOG("70B", false)})`),
    mlp_offload: mlp(
      147.18376,
      151.3378,
      25,
      true,
      `buffer_count 25, dist_opt_one_at_time 1 (${LOG("70B", true)})`,
    ),
  },
  "100b": {
    zero3: zero3(501.91592, 572.0272, 36, `buffer_count 36 (${LOG("100B", false)})`),
    mlp_offload: mlp(
      269.24605,
      275.5288,
      18,
      false,
      `buffer_count 18, dist_opt_one_at_time 0: the log prints 0 although its file name says single_proc1 (${
        LOG("100B", true)
      })`,
    ),
  },
  "120b": {
    zero3: zero3(
      475.48044,
      550.3606,
      36,
      "log not stored in the artifact: buffer_count 36 assumed, the 100B run's (the same node, 99.4 GiB of fp32 state per rank against 98.6)",
    ),
    mlp_offload: mlp(
      282.33147,
      288.1785,
      18,
      true,
      "log not stored in the artifact: buffer_count 18 assumed, the 100B run's; one-at-time as its file name says (single_proc1)",
    ),
  },
};
