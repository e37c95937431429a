/**
 * Replays an MLP-Offload artifact log against the `mlp-offload` generator:
 * per update pass, rank and path, the order the subgroups were updated in,
 * how many were read, served from the host cache and written, and which
 * stayed cached — from the log's lines and from the generator's op stream
 * for the same model and settings, side by side.
 *
 * ```sh
 * deno task check:mlp-log                                  # the committed 70B fixture
 * deno run -A tools/bench/mlp_offload_log.ts LOG.log             # a raw log of the artifact
 * deno run -A tools/bench/mlp_offload_log.ts LOG.log --write-fixture tools/bench/testdata/x.json \
 *   --source "OWNER/REPO@COMMIT:PATH"
 * ```
 *
 * What the log says (the DataStates/DeepSpeed fork the artifact pins prints
 * these lines from its update loop):
 *
 * - `--- Updating in order: [...]`: each rank's order for the pass;
 * - `-> write_wait[r][i]`: subgroup i's swap-out on rank r, every subgroup,
 *   cached or not; before it, one `-> complete_swap_out[r][-1]` per write
 *   the swap-out waited for (the previous write on the path, and its own
 *   when it is written synchronously). A subgroup kept in host memory swaps
 *   nothing out and waits for nothing; the last subgroup written on a path
 *   in a pass is written synchronously (the next one on the path is kept).
 *   So on each path the subgroups written are those up to the last one that
 *   waited, and the rest stayed cached;
 * - the configuration it printed (`swap_config`, the Megatron arguments).
 *
 * Reads and cache hits follow from the cache: a pass finds in host memory
 * what the pass before kept (none in the first), and reads the rest. A
 * subgroup is on the remote path when i % dist_opt_ratio == 0, the rule the
 * generator follows; the log's chains of waits (a remote write waits for the
 * remote write before it, not for the local one in between) agree with it.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { mlpOffload } from "../../workloads/mlp_offload.ts";
import { LLAMA_PRESETS } from "../../workloads/model.ts";
import type { WorkloadProgram } from "../../workloads/ops.ts";
import { resolveSetup } from "../../workloads/setup.ts";

/** The run's settings, as its log printed them. */
export interface LogConfig {
  readonly buffer_count: number;
  readonly dist_opt_ratio: number;
  readonly one_at_time: boolean;
  readonly grad_skip: boolean;
  readonly caching: boolean;
  readonly sub_group_size: number;
  readonly ranks: number;
  readonly layers: number;
  readonly hidden: number;
  readonly ffn_hidden: number;
  readonly heads: number;
  readonly kv_heads: number;
}

/** One rank's update pass: subgroups in swap-out order and the writes each waited for. */
export interface LogRankPass {
  readonly sequence: number[];
  readonly waits: number[];
}

/** One update pass of every rank. */
export interface LogPass {
  readonly order: number[];
  readonly ranks: LogRankPass[];
}

/** What a log holds for the replay (the committed fixture's shape). */
export interface MlpOffloadLog {
  readonly source?: Record<string, string>;
  readonly config: LogConfig;
  readonly passes: LogPass[];
}

/** One path of one rank in one pass, as the log or the generator has it. */
export interface PathPass {
  readonly order: number[];
  readonly reads: number;
  readonly hits: number;
  readonly writes: number;
  readonly kept: number[];
}

/** Per pass, per rank: the local and the remote path. */
export type PassStats = { local: PathPass; remote: PathPass }[][];

const RECORD =
  /-> (read_wait|compute_wait|write_wait|complete_swap_out)\[(\d+)\]\[(-?\d+)\]: [0-9.]+(?:e-?\d+)?/g;

/** The `key=value` of a printed swap_config (`dist_opt_ratio=3`). */
function printed(text: string, key: string): string {
  const m = text.match(new RegExp(`swap_config[^\\n]*\\b${key}=([^ \\n]+)`));
  if (!m) throw new SyntaxError(`the log prints no ${key} in its swap_config`);
  return m[1]!;
}

/** A Megatron argument of the launch line (`--num-layers 80`). */
function argument(text: string, flag: string): number {
  const m = text.match(new RegExp(`--${flag}[ ',]+(\\d+)`));
  if (!m) throw new SyntaxError(`the log's launch line has no --${flag}`);
  return Number(m[1]);
}

/** The settings a log printed. */
export function logConfig(text: string): LogConfig {
  const truthy = (v: string) => v === "True" || v === "1";
  const world = text.match(/dist_world_size=(\d+)/);
  const subgroup = text.match(/sub_group_size=(\d+)/);
  return {
    buffer_count: Number(printed(text, "buffer_count")),
    dist_opt_ratio: Number(printed(text, "dist_opt_ratio")),
    one_at_time: truthy(printed(text, "dist_opt_one_at_time")),
    grad_skip: truthy(printed(text, "dist_opt_grad_skip")),
    caching: truthy(printed(text, "dist_opt_enable_caching")),
    sub_group_size: subgroup ? Number(subgroup[1]) : NaN,
    ranks: world ? Number(world[1]) : NaN,
    layers: argument(text, "num-layers"),
    hidden: argument(text, "hidden-size"),
    ffn_hidden: argument(text, "ffn-hidden-size"),
    heads: argument(text, "num-attention-heads"),
    kv_heads: argument(text, "num-key-value-heads"),
  };
}

/**
 * Parses an artifact log: its settings and, per update pass (between
 * `-> update:start` and `-> update:stop`), each rank's subgroups in swap-out
 * order with the writes each waited for. Lines two ranks printed at once
 * (one run into the other) are read record by record.
 *
 * @throws {SyntaxError} when the log lacks a setting or a pass misses a rank's subgroup.
 */
export function parseMlpOffloadLog(text: string): MlpOffloadLog {
  const config = logConfig(text);
  const passes: LogPass[] = [];
  let ranks: { sequence: number[]; waits: number[]; pending: number }[] | undefined;
  let order: number[] | undefined;
  for (const line of text.split("\n")) {
    if (line.startsWith("-> update:start")) {
      ranks = Array.from({ length: config.ranks }, () => ({ sequence: [], waits: [], pending: 0 }));
      order = undefined;
      continue;
    }
    if (!ranks) continue;
    if (line.startsWith("-> update:stop")) {
      passes.push({
        order: order ?? [],
        ranks: ranks.map(({ sequence, waits }) => ({ sequence, waits })),
      });
      ranks = undefined;
      continue;
    }
    const listed = line.match(/Updating in order: \[([\d, ]*)\]/);
    if (listed) order ??= listed[1]!.split(",").map(Number);
    for (const [, kind, r, sg] of line.matchAll(RECORD)) {
      const rank = ranks[Number(r)]!;
      if (kind === "complete_swap_out") rank.pending++;
      else if (kind === "write_wait") {
        rank.sequence.push(Number(sg));
        rank.waits.push(rank.pending);
        rank.pending = 0;
      }
    }
  }
  checkPasses(passes);
  return { config, passes };
}

/** Every rank of every pass swapped out each subgroup of the pass's order once. */
function checkPasses(passes: readonly LogPass[]): void {
  for (const [p, pass] of passes.entries()) {
    for (const [r, rank] of pass.ranks.entries()) {
      const got = [...rank.sequence].sort((a, b) => a - b).join();
      const want = [...pass.order].sort((a, b) => a - b).join();
      if (got !== want) {
        throw new SyntaxError(
          `pass ${p}, rank ${r}: ${rank.sequence.length} write_wait lines for ${pass.order.length} subgroups`,
        );
      }
    }
  }
}

/** The committed form of a log: each pass's order and each rank's sequence as space-separated ids, its waits as digits. */
export interface LogFixture {
  readonly source?: Record<string, string>;
  readonly config: LogConfig;
  readonly passes: { order: string; ranks: { sequence: string; waits: string }[] }[];
}

/** A log in its committed form (compact, one line per rank and pass). */
export function toFixture(log: MlpOffloadLog): LogFixture {
  return {
    ...(log.source ? { source: log.source } : {}),
    config: log.config,
    passes: log.passes.map((p) => ({
      order: p.order.join(" "),
      ranks: p.ranks.map((r) => ({ sequence: r.sequence.join(" "), waits: r.waits.join("") })),
    })),
  };
}

/** A log from its committed form. */
export function fromFixture(f: LogFixture): MlpOffloadLog {
  const ids = (s: string) => s.split(" ").map(Number);
  return {
    ...(f.source ? { source: f.source } : {}),
    config: f.config,
    passes: f.passes.map((p) => ({
      order: ids(p.order),
      ranks: p.ranks.map((r) => ({ sequence: ids(r.sequence), waits: [...r.waits].map(Number) })),
    })),
  };
}

/** Per pass, rank and path, what the log's lines say (module documentation). */
export function logStats(log: MlpOffloadLog): PassStats {
  const remote = (i: number) =>
    log.config.dist_opt_ratio > 0 && i % log.config.dist_opt_ratio === 0;
  let before: Set<number>[] = [];
  return log.passes.map((pass) => {
    const now = pass.ranks.map((rank, r) => {
      const one = (onRemote: boolean): PathPass => {
        const at = rank.sequence.flatMap((i, k) => remote(i) === onRemote ? [k] : []);
        const order = at.map((k) => rank.sequence[k]!);
        const lastWaited = at.findLastIndex((k) => rank.waits[k]! > 0);
        const kept = order.slice(lastWaited + 1);
        const cached = before[r] ?? new Set<number>();
        const hits = order.filter((i) => cached.has(i)).length;
        return { order, reads: order.length - hits, hits, writes: lastWaited + 1, kept };
      };
      return { local: one(false), remote: one(true) };
    });
    before = now.map((r) => new Set([...r.local.kept, ...r.remote.kept]));
    return now;
  });
}

/** Per iteration, rank and path, what the generator's program does in its update phase. */
export function programStats(program: WorkloadProgram): PassStats {
  const sg = (label: string) => Number(label.slice(2, label.indexOf(".")));
  const iterations = program.warmupIterations + program.iterations;
  return Array.from({ length: iterations }, (_, it) =>
    program.ranks.map((rank) => {
      const ops = rank.ops.filter((op) => op.iteration === it && op.phase === "update");
      const order = ops.filter((op) => op.kind === "compute" && op.label.endsWith(".adam"))
        .map((op) => sg(op.label));
      const one = (path: string): PathPass => {
        const on = ops.filter((op) => op.path === path);
        const distinct = (kind: string) =>
          new Set(on.filter((op) => op.kind === kind).map((op) => sg(op.label)));
        const read = distinct("read"), hit = distinct("hit"), written = distinct("write");
        const mine = order.filter((i) => read.has(i) || hit.has(i));
        return {
          order: mine,
          reads: read.size,
          hits: hit.size,
          writes: written.size,
          kept: mine.filter((i) => !written.has(i)),
        };
      };
      return { local: one("local"), remote: one("remote") };
    }));
}

/** The LLaMA-2 preset of the log's Megatron arguments. */
export function presetOf(config: LogConfig): string {
  const m = LLAMA_PRESETS.find((p) =>
    p.layers === config.layers && p.hidden === config.hidden && p.ffnHidden === config.ffn_hidden &&
    p.heads === config.heads && p.kvHeads === config.kv_heads
  );
  if (!m) {
    throw new RangeError(
      `no LLaMA-2 preset has ${config.layers} layers of ${config.hidden} (ffn ${config.ffn_hidden}, ` +
        `${config.heads} heads, ${config.kv_heads} key/value heads)`,
    );
  }
  return m.name;
}

/** The generator's program for the log's run: its model, ranks, subgroups and settings. */
export function replayProgram(log: MlpOffloadLog): WorkloadProgram {
  const c = log.config;
  const setup = resolveSetup({
    model: presetOf(c),
    ranksPerNode: c.ranks,
    subgroupSize: c.sub_group_size,
    scale: 1e-4,
    iterations: log.passes.length,
    warmup: 0,
  });
  return mlpOffload.build(setup, { local: ["local"], remote: "remote" }, {
    bufferCount: c.buffer_count,
    distOptRatio: c.dist_opt_ratio,
    locks: c.one_at_time ? "remote" : "none",
    swapGradients: !c.grad_skip,
  });
}

/** One line of the comparison: a pass, rank and path, the log's figures and the generator's. */
export interface ReplayRow {
  readonly pass: number;
  readonly rank: number;
  readonly path: "local" | "remote";
  readonly log: PathPass;
  readonly generator: PathPass;
  /** Order, reads, hits, writes and the cached subgroups all the same. */
  readonly equal: boolean;
}

/** The log's passes against the generator's, row by row. */
export function compareReplay(log: PassStats, generator: PassStats): ReplayRow[] {
  if (log.length !== generator.length) {
    throw new RangeError(`the log has ${log.length} passes, the program ${generator.length}`);
  }
  const same = (a: PathPass, b: PathPass) =>
    a.order.join() === b.order.join() && a.reads === b.reads && a.hits === b.hits &&
    a.writes === b.writes && [...a.kept].sort().join() === [...b.kept].sort().join();
  return log.flatMap((ranks, pass) =>
    ranks.flatMap((r, rank) =>
      (["local", "remote"] as const).map((path) => {
        const g = generator[pass]![rank]![path];
        return { pass, rank, path, log: r[path], generator: g, equal: same(r[path], g) };
      })
    )
  );
}

/** The Markdown table of the comparison: one row per pass and path (ranks folded when alike). */
export function replayTable(rows: readonly ReplayRow[]): string {
  const out = [
    "| pass | order | path | subgroups | reads log / gen | hits log / gen | writes log / gen | cached at the end log / gen | ranks equal |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  ];
  const passes = [...new Set(rows.map((r) => r.pass))];
  for (const pass of passes) {
    for (const path of ["local", "remote"] as const) {
      const these = rows.filter((r) => r.pass === pass && r.path === path);
      const r = these[0]!;
      const first = r.log.order[0]!, last = r.log.order.at(-1)!;
      const pair = (f: (x: PathPass) => number) => `${f(r.log)} / ${f(r.generator)}`;
      out.push(
        `| ${pass} | ${
          first < last ? "ascending" : "descending"
        } | ${path} | ${r.log.order.length} | ${pair((x) => x.reads)} | ${pair((x) => x.hits)} | ${
          pair((x) => x.writes)
        } | ${pair((x) => x.kept.length)} | ${
          these.filter((x) => x.equal).length
        } of ${these.length} |`,
      );
    }
  }
  return out.join("\n");
}

const DEFAULT_FIXTURE = fileURLToPath(
  new URL("./testdata/mlp_offload_70b_log.json", import.meta.url),
);

async function main(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      "write-fixture": { type: "string" },
      source: { type: "string" },
      json: { type: "boolean" },
    },
    allowPositionals: true,
  });
  const file = positionals[0] ?? DEFAULT_FIXTURE;
  const text = await Deno.readTextFile(file);
  let log: MlpOffloadLog = file.endsWith(".json")
    ? fromFixture(JSON.parse(text))
    : parseMlpOffloadLog(text);
  if (values["write-fixture"]) {
    const source = {
      log: values.source ?? file,
      parsed_by: "tools/bench/mlp_offload_log.ts (parseMlpOffloadLog)",
    };
    log = { source, ...log };
    await Deno.writeTextFile(
      values["write-fixture"],
      JSON.stringify(toFixture(log), null, 2) + "\n",
      { createNew: true },
    );
  }
  const rows = compareReplay(logStats(log), programStats(replayProgram(log)));
  const bad = rows.filter((r) => !r.equal);
  if (values.json) console.log(JSON.stringify(rows));
  else {
    console.log(replayTable(rows));
    console.log(
      `\n${log.passes.length} passes × ${log.config.ranks} ranks × 2 paths of ${
        presetOf(log.config)
      } ` +
        `(buffer_count ${log.config.buffer_count}, dist_opt_ratio ${log.config.dist_opt_ratio}): ` +
        (bad.length === 0 ? "the generator matches the log" : `${bad.length} rows differ`),
    );
  }
  return bad.length === 0 ? 0 : 1;
}

if (import.meta.main) {
  try {
    Deno.exit(await main(Deno.args));
  } catch (e) {
    console.error(`mlp_offload_log: ${(e as Error).message}`);
    Deno.exit(2);
  }
}
