/**
 * Prints the calibration table of the reference profiles (issue 18): on each
 * `results/reference/*.json`, the update phase `plan` predicts for the plan,
 * ZeRO-Infinity and MLP-Offload's fixed ratio at 40B, 70B and 100B, beside
 * the update phases the MLP-Offload paper's artifact published for DeepSpeed
 * ZeRO-3 and MLP-Offload on its node, and which figures of each profile were
 * set from those published numbers.
 *
 * ```sh
 * deno task bench:reference                     # results/reference/*.json
 * deno run -A tools/reference_table.ts A.json B.json
 * ```
 *
 * The plans are made in-process (solver/planner.ts, as `tierbench plan`
 * makes them) with 4 ranks per node, subgroups of 1e8 elements and 64 GiB of
 * host cache, the settings of the published runs as far as `plan` takes them.
 *
 * @module
 */

import { basename, join } from "node:path";
import { makePlan } from "../solver/planner.ts";
import { readProfile } from "../solver/profile.ts";
import { resolveSetup } from "../workloads/setup.ts";

/** The models of the table. */
export const REFERENCE_MODELS = ["40b", "70b", "100b"] as const;

/**
 * The published update phases, seconds, of the MLP-Offload artifact's runs
 * (one node, 4 GPUs, subgroups of 1e8): DeepSpeed ZeRO-3 with NVMe offload
 * and MLP-Offload (NVMe + VAST, one in three subgroups remote). From
 * DataStates/artifacts MLP-Offload/README.md (the parse-res.py table), as
 * ../shared/DESIGN.md quotes them.
 */
export const PUBLISHED: Readonly<
  Record<(typeof REFERENCE_MODELS)[number], { zero3: number; mlp_offload: number }>
> = {
  "40b": { zero3: 213.61043, mlp_offload: 98.50729 },
  "70b": { zero3: 336.42677, mlp_offload: 147.18376 },
  "100b": { zero3: 501.91592, mlp_offload: 269.24605 },
};

/**
 * Which figures of each reference profile were set from a published update
 * phase, by file name; a profile not listed has none (all its figures are
 * independent of the published times).
 */
export const CALIBRATION: Readonly<Record<string, string>> = {
  "mlpoffload-artifact-4gpu-nvme-vast.json":
    "file read = write bandwidth (5.71 GB/s) from the published ZeRO-3 **70B** time and the bytes its log states (calibration); pfs (3.14 GB/s each way) the least that explains the **70B** MLP-Offload log and its published time (a lower bound, taken as the figure); CPU Adam from the 70B ZeRO-3 log's compute time. Independent of the published times: 40B and 100B in both columns, and everything at 70B but those three figures",
};

/** Options of {@linkcode referenceTable}. */
export interface ReferenceTableOptions {
  /** Host cache of every plan, bytes (default 64 GiB). */
  readonly hostCacheBytes?: number;
  /** Ranks per node (default 4, as the published runs). */
  readonly ranksPerNode?: number;
}

/** The signed difference of a prediction from a published figure, in %. */
function diff(predicted: number, published: number): string {
  const d = (predicted / published - 1) * 100;
  return `${d >= 0 ? "+" : "−"}${Math.abs(d).toFixed(0)} %`;
}

/** Seconds, to three significant digits at most. */
function secs(s: number): string {
  return s >= 100 ? s.toFixed(0) : s.toPrecision(3);
}

/**
 * The Markdown table for the given profiles: one row per profile and model,
 * then a line per profile saying what of it is calibration.
 *
 * @throws {RangeError} when `files` is empty.
 * @example
 * ```ts ignore
 * console.log(await referenceTable(["results/reference/polaris-4gpu-nvme-lustre.json"]));
 * ```
 */
export async function referenceTable(
  files: readonly string[],
  opts: ReferenceTableOptions = {},
): Promise<string> {
  if (files.length === 0) throw new RangeError("no profiles: give at least one profile file");
  const hostCacheBytes = opts.hostCacheBytes ?? 64 * 2 ** 30;
  const ranksPerNode = opts.ranksPerNode ?? 4;
  const rows = [
    "| profile | model | plan | ZeRO-Infinity | MLP-Offload fixed ratio | published ZeRO-3 | published MLP-Offload | ZeRO-Infinity vs published | MLP-Offload vs published |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  ];
  const notes: string[] = [];
  for (const file of files) {
    const profile = await readProfile(file);
    const name = basename(file);
    for (const model of REFERENCE_MODELS) {
      const plan = await makePlan(
        profile,
        resolveSetup({ model, ranksPerNode, subgroupSize: 1e8 }),
        { hostCacheBytes },
      );
      const p = plan.predictions;
      const mlp = p.mlp_offload;
      const pub = PUBLISHED[model];
      const paths = plan.placement.paths.filter((x) => x.subgroups > 0)
        .map((x) => `${x.subgroups} ${x.tier}`).join(" + ");
      rows.push(
        `| ${name} | ${model.toUpperCase()} | ${secs(p.plan.update_s)} s (${paths}) | ${
          secs(p.zero_infinity.update_s)
        } s | ${mlp ? `${secs(mlp.update_s)} s` : "—"} | ${secs(pub.zero3)} s | ${
          secs(pub.mlp_offload)
        } s | ${diff(p.zero_infinity.update_s, pub.zero3)} | ${
          mlp ? diff(mlp.update_s, pub.mlp_offload) : "—"
        } |`,
      );
    }
    notes.push(
      `- ${name}: ${
        CALIBRATION[name] ??
          "no figure set from a published update time (another node: the published times are context, not a check)"
      }`,
    );
  }
  return [
    ...rows,
    "",
    `Settings: ${ranksPerNode} ranks per node, subgroups of 1e8, ${
      (hostCacheBytes / 2 ** 30).toFixed(0)
    } GiB of host cache; plan's subgroups per rank by tier. Calibration:`,
    ...notes,
  ].join("\n");
}

if (import.meta.main) {
  let files = Deno.args;
  if (files.length === 0) {
    const dir = join(import.meta.dirname ?? ".", "..", "results", "reference");
    files = [];
    for await (const e of Deno.readDir(dir)) {
      if (e.isFile && e.name.endsWith(".json")) files.push(join(dir, e.name));
    }
    files.sort();
  }
  console.log(await referenceTable(files));
}
