/**
 * The reference profiles against MLP-Offload's published runs.
 *
 * Without options: on each `results/reference/*.json`, the update phase
 * `plan` predicts for the plan, ZeRO-Infinity and MLP-Offload's fixed ratio
 * for the LLaMA-2 models of the artifact's table, beside the update phases
 * the artifact published for DeepSpeed ZeRO-3 and MLP-Offload on its node,
 * and which figures of each profile were set from those published numbers.
 *
 * With `--calibrate MODEL`: on the artifact's node profile (or the file
 * given), each published run predicted with the settings its log printed
 * (tools/bench/_artifact_runs.ts) — the generators' programs simulated at the
 * profile's rates (solver/predict.ts) — after one bandwidth scale, for all
 * tiers at once, is fitted to MODEL's row alone (both approaches, least
 * squares on the log of predicted over published); then every other row is
 * a prediction, and the table says how far each lands from the published
 * time, and the predicted speedup (ZeRO-3's update over MLP-Offload's) from
 * the published one. `--json` prints one line per prediction.
 *
 * ```sh
 * deno task bench:reference                     # results/reference/*.json
 * deno task bench:reference --calibrate 40b     # the artifact's node, fitted on 40B
 * deno task bench:reference --calibrate 40b --json
 * deno run -A tools/bench/reference_table.ts A.json B.json
 * ```
 *
 * The plans are made in-process (solver/planner.ts, as `tierbench plan`
 * makes them) with 4 ranks per node, subgroups of 1e8 elements and 64 GiB of
 * host cache, the settings of the published runs as far as `plan` takes them.
 *
 * @module
 */

import { basename, join } from "node:path";
import { parseArgs } from "node:util";
import { makePlan } from "../../solver/planner.ts";
import { predictUpdate } from "../../solver/predict.ts";
import { readProfile } from "../../solver/profile.ts";
import type { Profile } from "../../schema/profile.ts";
import { resolveSetup } from "../../workloads/setup.ts";
import { ARTIFACT_MODELS, ARTIFACT_RUNS, type ArtifactModel } from "./_artifact_runs.ts";

/** The models of the table: the artifact's published sizes. */
export const REFERENCE_MODELS = ARTIFACT_MODELS;

/** The published update phases, seconds, by model (README.md of the artifact at e181b47). */
export const PUBLISHED: Readonly<
  Record<ArtifactModel, { zero3: number; mlp_offload: number }>
> = Object.fromEntries(
  ARTIFACT_MODELS.map((m) => [m, {
    zero3: ARTIFACT_RUNS[m].zero3.update_s,
    mlp_offload: ARTIFACT_RUNS[m].mlp_offload.update_s,
  }]),
) as Record<ArtifactModel, { zero3: number; mlp_offload: number }>;

/** The artifact's node profile. */
export const ARTIFACT_PROFILE = "mlpoffload-artifact-4gpu-nvme-vast.json";

/**
 * Which figures of each reference profile were set from a published update
 * phase, by file name; a profile not listed has none (all its figures are
 * independent of the published times).
 */
export const CALIBRATION: Readonly<Record<string, string>> = {
  [ARTIFACT_PROFILE]:
    "the NVMe's mixed figures from the published ZeRO-3 **40B** update and the bytes its log states; its write figure from the 40B backward times; VAST's from per-transfer timings of the 70B logs (not a published time); CPU Adam from the 40B ZeRO-3 log. Independent of the published times: every row but 40B",
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
        resolveSetup({ model: `llama2-${model}`, ranksPerNode, subgroupSize: 1e8 }),
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

/** One published run predicted: its row, approach, predicted and published update phases. */
export interface CalibratedPrediction {
  readonly model: ArtifactModel;
  readonly system: "zero-3" | "mlp-offload";
  readonly predicted_s: number;
  readonly published_s: number;
  /** The row the bandwidth scale was fitted on. */
  readonly calibration: boolean;
}

/** Both approaches of `model` predicted on `profile` with every bandwidth times `scale`. */
export function artifactRow(
  profile: Profile,
  model: ArtifactModel,
  scale: number,
): { zero3: number; mlp_offload: number } {
  const row = ARTIFACT_RUNS[model];
  const setup = (iterations: number, warmup: number) =>
    resolveSetup({
      model: `llama2-${model}`,
      ranksPerNode: 4,
      subgroupSize: 1e8,
      adamRate: profile.host.cpu_adam_params_per_s,
      iterations,
      warmup,
    });
  // a warm-up pass first (ZeRO-3's first update reads no m or v yet, MLP-Offload's finds nothing
  // cached), then ZeRO-3's steady pass and MLP-Offload's pass each way
  const zero3 = predictUpdate(profile, {
    workload: "zero-infinity",
    setup: setup(1, 1),
    options: row.zero3.options,
  }, scale);
  const mlp = predictUpdate(profile, {
    workload: "mlp-offload",
    setup: setup(2, 1),
    options: row.mlp_offload.options,
  }, scale);
  return { zero3: zero3.update_s, mlp_offload: mlp.update_s };
}

/**
 * The one bandwidth scale that fits `model`'s row best: least squares on
 * log(predicted / published) of its two approaches (golden-section search
 * on the log of the scale, from 1/10 to 10).
 */
export function calibrate(profile: Profile, model: ArtifactModel): number {
  const pub = PUBLISHED[model];
  const cost = (logScale: number) => {
    const p = artifactRow(profile, model, Math.exp(logScale));
    return Math.log(p.zero3 / pub.zero3) ** 2 + Math.log(p.mlp_offload / pub.mlp_offload) ** 2;
  };
  const g = (Math.sqrt(5) - 1) / 2;
  let a = Math.log(0.1), b = Math.log(10);
  let c = b - g * (b - a), d = a + g * (b - a);
  let fc = cost(c), fd = cost(d);
  while (b - a > 1e-3) {
    if (fc < fd) {
      [b, d, fd] = [d, c, fc];
      c = b - g * (b - a);
      fc = cost(c);
    } else {
      [a, c, fc] = [c, d, fd];
      d = a + g * (b - a);
      fd = cost(d);
    }
  }
  return Math.exp((a + b) / 2);
}

/** Every row predicted after calibrating on `model`: the predictions and the scale. */
export function calibratedPredictions(
  profile: Profile,
  model: ArtifactModel,
): { scale: number; predictions: CalibratedPrediction[] } {
  const scale = calibrate(profile, model);
  const predictions = ARTIFACT_MODELS.flatMap((m) => {
    const p = artifactRow(profile, m, scale);
    return [
      {
        model: m,
        system: "zero-3" as const,
        predicted_s: p.zero3,
        published_s: PUBLISHED[m].zero3,
      },
      {
        model: m,
        system: "mlp-offload" as const,
        predicted_s: p.mlp_offload,
        published_s: PUBLISHED[m].mlp_offload,
      },
    ].map((x) => ({ ...x, calibration: m === model }));
  });
  return { scale, predictions };
}

/** The Markdown table of {@linkcode calibratedPredictions}, with the bounds it is judged by. */
export function calibrationTable(
  profile: Profile,
  scale: number,
  predictions: readonly CalibratedPrediction[],
): string {
  const rows = [
    "| model | ZeRO-3 predicted | published | Δ | MLP-Offload predicted | published | Δ | speedup predicted | published | Δ |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  ];
  const misses: string[] = [];
  for (const m of ARTIFACT_MODELS) {
    const z = predictions.find((p) => p.model === m && p.system === "zero-3")!;
    const o = predictions.find((p) => p.model === m && p.system === "mlp-offload")!;
    const speed = z.predicted_s / o.predicted_s, pubSpeed = z.published_s / o.published_s;
    const mark = (d: number, bound: number, what: string) => {
      if (z.calibration) return "";
      if (Math.abs(d) > bound) misses.push(`${m.toUpperCase()} ${what}`);
      return Math.abs(d) <= bound ? " ✓" : " ✗";
    };
    const pct = (a: number, b: number) => a / b - 1;
    rows.push(
      `| ${m.toUpperCase()}${z.calibration ? " (calibration)" : ""} | ${secs(z.predicted_s)} s | ${
        secs(z.published_s)
      } s | ${diff(z.predicted_s, z.published_s)}${
        mark(pct(z.predicted_s, z.published_s), 0.15, "ZeRO-3")
      } | ${secs(o.predicted_s)} s | ${secs(o.published_s)} s | ${
        diff(o.predicted_s, o.published_s)
      }${mark(pct(o.predicted_s, o.published_s), 0.15, "MLP-Offload")} | ${speed.toFixed(2)}× | ${
        pubSpeed.toFixed(2)
      }× | ${diff(speed, pubSpeed)}${mark(pct(speed, pubSpeed), 0.10, "speedup")} |`,
    );
  }
  const settings = ARTIFACT_MODELS.map((m) =>
    `- ${m.toUpperCase()}: ZeRO-3 ${ARTIFACT_RUNS[m].zero3.settings}; MLP-Offload ${
      ARTIFACT_RUNS[m].mlp_offload.settings
    }`
  );
  return [
    ...rows,
    "",
    `${basename(profile.source)}, every bandwidth × ${
      scale.toFixed(3)
    } (fitted on the calibration row). ` +
    "Bounds: each prediction within 15 % of the published update phase, the speedup within 10 %: " +
    (misses.length === 0 ? "all met." : `missed by ${misses.join(", ")}.`),
    "The runs' settings:",
    ...settings,
  ].join("\n");
}

async function main(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    options: { calibrate: { type: "string" }, json: { type: "boolean" } },
    allowPositionals: true,
  });
  const dir = join(import.meta.dirname ?? ".", "..", "..", "results", "reference");
  if (values.calibrate !== undefined) {
    const model = values.calibrate.toLowerCase() as ArtifactModel;
    if (!ARTIFACT_MODELS.includes(model)) {
      throw new RangeError(
        `--calibrate: "${values.calibrate}" is not a row of the published table; use one of ${
          ARTIFACT_MODELS.join(", ")
        }`,
      );
    }
    const profile = await readProfile(positionals[0] ?? join(dir, ARTIFACT_PROFILE));
    const { scale, predictions } = calibratedPredictions(profile, model);
    if (values.json) {
      for (const p of predictions.filter((x) => !x.calibration)) {
        console.log(JSON.stringify({
          model: p.model,
          system: p.system,
          predicted_s: Number(p.predicted_s.toFixed(3)),
          published_s: p.published_s,
          bandwidth_scale: Number(scale.toFixed(4)),
        }));
      }
    } else console.log(calibrationTable(profile, scale, predictions));
    return;
  }
  let files = positionals;
  if (files.length === 0) {
    files = [];
    for await (const e of Deno.readDir(dir)) {
      if (e.isFile && e.name.endsWith(".json")) files.push(join(dir, e.name));
    }
    files.sort();
  }
  console.log(await referenceTable(files));
}

if (import.meta.main) {
  try {
    await main(Deno.args);
  } catch (e) {
    console.error(`reference_table: ${(e as Error).message}`);
    Deno.exit(2);
  }
}
