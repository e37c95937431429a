/**
 * The profile input contract of the placement solver: everything the solver
 * knows about a node, read from ONE document and never from I/O.
 *
 * Two documents are accepted, and both become one normalized
 * {@linkcode Profile}:
 *
 * - a tierbench result (`"schema": "tierbench/result@1"`) of `deno task
 *   bench` (kind `profile`), `tierbench contention` (kind `contention`) or
 *   `tierbench run` (kind `run`): each tier's bandwidths come from its 1 MiB
 *   sequential depth-8 runs (libaio, or the s3 engine for s3), else from the
 *   contention matrix's `alone` figures; the matrix is kept as measured;
 * - a hand-written profile (`"schema": "tierbench/profile@1"`, see
 *   docs/profile.md) for a node nobody has measured yet, each figure with its
 *   source (a datasheet, a paper, a derivation, or a stated assumption).
 *
 * Bad input is a {@linkcode ProfileError} (a {@linkcode ConfigError}) whose
 * one-line message names the document, the JSON path of the bad field
 * (`tiers.file.read_bw_bytes`) and what is allowed there.
 *
 * ```ts ignore
 * const profile = await readProfile("results/reference/polaris-4gpu-nvme-lustre.json");
 * slowdownOf(profile, "file", "read", [{ tier: "pfs", direction: "write" }]);
 * ```
 *
 * @module
 */

import { z } from "zod";
import { describeValue, describeZodIssue, formatPath, valueAt } from "../core/zod_issue.ts";
import { jsonProblem } from "../core/json_file.ts";
import { RESULT_SCHEMA } from "../schema/result.ts";
import { fromFioJson, isFioJson } from "../schema/fio_json_read.ts";
import {
  ACCEPTED_SCHEMAS,
  type Direction,
  DIRECTIONS,
  type LatencyUs,
  type MeasuredWith,
  parsePath,
  type Profile,
  PROFILE_PATTERN,
  PROFILE_SCHEMA,
  PROFILE_SCHEMA_ID,
  PROFILE_TIER_KINDS,
  type ProfileContention,
  ProfileError,
  type ProfileTier,
  type ProfileTierKind,
  type SlowdownMatrix,
  SOURCE_BASES,
} from "../schema/profile.ts";
import {
  RESULT_KINDS,
  type ResultContention,
  type ResultDoc,
  resultDocSchema,
  type ResultRun,
} from "./_result_schema.ts";
import {
  measuredScaling,
  SCALING_ALLOWED,
  scalingAllowedAt,
  scalingFieldsAt,
  scalingSchema,
  statedScaling,
} from "./_profile_scaling.ts";
import {
  concurrencyAllowedAt,
  concurrencyFieldsAt,
  concurrencyRunNames,
  concurrencySchema,
  isConcurrencyPath,
  measuredConcurrency,
  statedConcurrency,
} from "./_profile_concurrency.ts";

// ------------------------------------------------------- hand-written schema

const positive = z.number().positive();
/**
 * A rate (bytes/s, parameters/s): at least 1 and at most 1e15, so every time
 * the model derives from one is finite (5e-324 made it Infinity, and HiGHS
 * refused the LP).
 */
const rate = z.number().min(1).max(1e15);
const count = z.int().positive();
const latencySchema = z.strictObject({ p50: positive, p99: positive });

const tierSchema = z.strictObject({
  kind: z.enum(PROFILE_TIER_KINDS),
  read_bw_bytes: rate,
  write_bw_bytes: rate,
  bs: count,
  iodepth: count,
  mixed_read_bw_bytes: rate.optional(),
  mixed_write_bw_bytes: rate.optional(),
  capacity_bytes: positive.optional(),
  read_lat_us: latencySchema.optional(),
  write_lat_us: latencySchema.optional(),
  path: z.string().min(1).optional(),
  concurrency: concurrencySchema.optional(),
  note: z.string().optional(),
});

const hostSchema = z.strictObject({
  name: z.string().min(1),
  memory_bytes: positive,
  cpus: count,
  cpu_model: z.string().optional(),
  gpus_per_node: count.optional(),
  gpu_model: z.string().optional(),
  pcie_bytes_per_s: rate.optional(),
  gpu_adam_params_per_s: rate.optional(),
  cpu_adam_params_per_s: rate.optional(),
});

/** A slowdown factor: from 0.001 to 1000 (1.2e15 made the LP's coefficients unreadable to HiGHS). */
const factor = z.number().min(0.001).max(1000);
const factorRows = z.record(z.string(), z.record(z.string(), factor));

const contentionSchema = z.strictObject({
  slowdown: z.strictObject({ read: factorRows.optional(), write: factorRows.optional() }),
  note: z.string().optional(),
});

const sourceSchema = z.strictObject({
  fields: z.array(z.string().min(1)).min(1),
  basis: z.enum(SOURCE_BASES),
  what: z.string().min(1),
  citation: z.string().min(1).optional(),
  url: z.url().optional(),
  derivation: z.string().min(1).optional(),
});

const ISO_DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?$/;

const profileDocSchema = z.strictObject({
  schema: z.literal(PROFILE_SCHEMA),
  created: z.string().refine(
    (s) => ISO_DATE.test(s) && !Number.isNaN(Date.parse(s)),
    "is not an ISO 8601 date",
  ),
  description: z.string().optional(),
  host: hostSchema,
  tiers: z.record(z.string(), tierSchema),
  contention: contentionSchema.optional(),
  scaling: scalingSchema.optional(),
  sources: z.array(sourceSchema).optional(),
  /** The JSON Schema the document follows (schemas/profile.schema.json), for editors. */
  $schema: z.literal(PROFILE_SCHEMA_ID).optional(),
});

type ProfileDoc = z.infer<typeof profileDocSchema>;

/**
 * The JSON Schema (draft-07) of a hand-written profile, generated from the
 * zod schema {@linkcode loadProfile} checks it with; `deno task schemas` writes
 * it to schemas/profile.schema.json. Checks zod makes in code (the slowdown
 * keys, the sources' fields, a real calendar date) are not in it.
 *
 * @example
 * ```ts
 * import { profileJsonSchema } from "./profile.ts";
 * console.assert((profileJsonSchema().required as string[]).includes("tiers"));
 * ```
 */
export function profileJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(profileDocSchema, {
    target: "draft-7",
    io: "input",
    unrepresentable: "any",
  });
}

/** The fields an object at `path` of a hand-written profile may have. */
function fieldsAt(path: readonly PropertyKey[]): string[] {
  const keys = (s: { shape: Record<string, unknown> }) => Object.keys(s.shape);
  const [a, , c] = path;
  if (path.length === 0) return keys(profileDocSchema);
  if (a === "host") return keys(hostSchema);
  if (a === "sources") return keys(sourceSchema);
  if (a === "scaling") return scalingFieldsAt(path);
  if (isConcurrencyPath(path)) return concurrencyFieldsAt(path);
  if (a === "contention") return path.length === 1 ? keys(contentionSchema) : [...DIRECTIONS];
  if (a === "tiers" && path.length === 2) return keys(tierSchema);
  if (a === "tiers" && (c === "read_lat_us" || c === "write_lat_us")) return ["p50", "p99"];
  return [];
}

const BANDWIDTH = "a bandwidth in bytes per second, a number from 1 to 1e15 (e.g. 6.4e9)";
const MICROSECONDS = "microseconds, a number > 0";
const FACTOR =
  "a slowdown factor from 0.001 to 1000: bandwidth alone / bandwidth with the others " +
  "(1: unaffected, 2: half as fast)";

/** What a field accepts, by its name (the last key of its path). */
const ALLOWED: Record<string, string> = {
  schema: ACCEPTED_SCHEMAS.map((s) => `"${s}"`).join(" or "),
  created: "an ISO 8601 date or date-time, e.g. 2026-11-21 or 2026-11-21T14:03:00Z",
  description: "a string",
  kind: `one of ${PROFILE_TIER_KINDS.join(", ")}`,
  read_bw_bytes: BANDWIDTH,
  write_bw_bytes: BANDWIDTH,
  bs: "the request size in bytes the bandwidths were measured at, an integer > 0 (e.g. 1048576)",
  iodepth: "the requests in flight they were measured at, an integer ≥ 1 (e.g. 8)",
  mixed_read_bw_bytes: `${BANDWIDTH}, read while the tier also writes`,
  mixed_write_bw_bytes: `${BANDWIDTH}, written while the tier also reads`,
  capacity_bytes: "the bytes available for optimizer state, a number > 0",
  read_lat_us: "an object { p50, p99 } in microseconds",
  write_lat_us: "an object { p50, p99 } in microseconds",
  p50: MICROSECONDS,
  p99: `${MICROSECONDS}, at least p50`,
  path: "a non-empty string (the directory, or s3://BUCKET/PREFIX)",
  note: "a string",
  host: "an object with name, memory_bytes and cpus (see docs/profile.md)",
  tiers: 'an object of tiers by label, e.g. { "file": { "kind": "file", … } }',
  name: "the host's name, a non-empty string",
  memory_bytes: "bytes, a number > 0 (e.g. 549755813888 for 512 GiB)",
  cpus: "the number of logical CPUs, an integer ≥ 1",
  cpu_model: "a string",
  gpu_model: "a string",
  gpus_per_node: "an integer ≥ 1",
  pcie_bytes_per_s:
    "host↔GPU bandwidth of one GPU in one direction, bytes/s, a number from 1 to 1e15",
  gpu_adam_params_per_s: "parameters one GPU updates per second, a number from 1 to 1e15",
  cpu_adam_params_per_s:
    "parameters one rank's CPU Adam updates per second, a number from 1 to 1e15",
  contention: "an object { slowdown: { read, write } } (see docs/profile.md)",
  slowdown: "an object { read, write } of slowdown rows by tier",
  sources: "an array of { fields, basis, what, citation, url, derivation }",
  fields: "JSON paths of figures in this document, e.g. tiers.file.read_bw_bytes",
  basis: `one of ${SOURCE_BASES.join(", ")}`,
  what: "a non-empty string: the figure or claim",
  citation: "a non-empty string: document, section, table or page",
  url: "an absolute URL",
  derivation: "a non-empty string: how the figure follows, which factors are assumptions",
  ...SCALING_ALLOWED,
};

/** What the field at `path` accepts. */
function allowedAt(path: readonly PropertyKey[]): string | undefined {
  const scaling = path[0] === "scaling" ? scalingAllowedAt(path) : undefined;
  if (scaling !== undefined) return scaling;
  if (isConcurrencyPath(path)) return concurrencyAllowedAt(path);
  if (path[0] === "contention" && path[1] === "slowdown") {
    if (path.length === 5) return FACTOR;
    if (path.length === 4) return 'an object of factors by the other tiers, e.g. { "pfs": 1.1 }';
    if (path.length === 3) return "an object of slowdown rows by tier label";
  }
  if (path[0] === "tiers" && path.length === 2) return "an object with kind, read_bw_bytes, …";
  if (path[0] === "sources" && path.length === 2) return "an object { fields, basis, what, … }";
  if (path[0] === "sources" && path[2] === "fields" && path.length === 4) {
    return ALLOWED.fields;
  }
  const last = [...path].reverse().find((p) => typeof p === "string");
  return last === undefined ? undefined : ALLOWED[last];
}

/** The first issue of a failed parse, as a {@linkcode ProfileError}. */
function issueError(source: string, input: unknown, issues: z.core.$ZodIssue[]): ProfileError {
  const d = describeZodIssue(issues, { input, allowed: allowedAt, fields: fieldsAt });
  const more = d.count > 1 ? ` (the first of ${d.count} problems)` : "";
  return withMore(source, d.where, d.problem, d.allowed, more);
}

/** A ProfileError whose message ends with `more`. */
function withMore(
  source: string,
  path: string,
  problem: string,
  allowed: string | undefined,
  more: string,
): ProfileError {
  return allowed === undefined
    ? new ProfileError(source, path, problem + more)
    : new ProfileError(source, path, problem, allowed + more);
}

// ------------------------------------------------------------ contention keys

/** One other tier of a slowdown key: its label and what it does. */
export interface OtherTier {
  readonly tier: string;
  readonly direction: Direction;
}

const LABEL = /^[A-Za-z][A-Za-z0-9_-]*$/;
const LABEL_RULE =
  "letters, digits, _ and - starting with a letter (no : or +), e.g. file or file2";

/**
 * The key of `others` in a row of `direction`: each other tier by its label
 * when it does `direction` too, by `label:read` / `label:write` when it does
 * the other, ordered as `order` (the profile's tiers), joined with `+` — the
 * rule of bench/contention.ts's slowdownKey.
 *
 * @example
 * ```ts
 * import { slowdownKeyOf } from "./profile.ts";
 * const order = ["memory", "file", "pfs"];
 * const key = slowdownKeyOf("read", [{ tier: "pfs", direction: "write" }, { tier: "memory", direction: "read" }], order);
 * console.assert(key === "memory+pfs:write");
 * ```
 */
export function slowdownKeyOf(
  direction: Direction,
  others: readonly OtherTier[],
  order: readonly string[],
): string {
  const rank = (t: string) => {
    const i = order.indexOf(t);
    return i < 0 ? order.length : i;
  };
  return [...others]
    .sort((a, b) => rank(a.tier) - rank(b.tier) || (a.tier < b.tier ? -1 : a.tier > b.tier ? 1 : 0))
    .map((o) => o.direction === direction ? o.tier : `${o.tier}:${o.direction}`)
    .join("+");
}

/** The other tiers a key names, or a sentence saying why it names none. */
function parseKey(key: string, direction: Direction): OtherTier[] | string {
  const out: OtherTier[] = [];
  for (const part of key.split("+")) {
    const [tier = "", dir, ...rest] = part.split(":");
    if (!LABEL.test(tier) || rest.length > 0) return `"${part}" is not a tier label`;
    if (dir !== undefined && dir !== "read" && dir !== "write") {
      return `"${part}": the direction after ":" must be read or write`;
    }
    if (out.some((o) => o.tier === tier)) return `names ${tier} twice`;
    out.push({ tier, direction: dir === undefined ? direction : dir });
  }
  return out;
}

/**
 * A slowdown matrix with every key checked against `labels` and written in
 * canonical order; throws a ProfileError at the first bad key.
 */
function canonicalMatrix(
  rows: { [D in Direction]?: Record<string, Record<string, number | null>> | undefined },
  labels: readonly string[],
  source: string,
): SlowdownMatrix {
  const out: SlowdownMatrix = { read: {}, write: {} };
  for (const d of DIRECTIONS) {
    for (const [tier, row] of Object.entries(rows[d] ?? {})) {
      const at = ["contention", "slowdown", d, tier];
      if (!labels.includes(tier)) {
        throw new ProfileError(
          source,
          formatPath(at),
          "is not a tier of this profile",
          labels.join(", "),
        );
      }
      const canon: Record<string, number | null> = {};
      for (const [key, value] of Object.entries(row)) {
        const where = formatPath([...at, key]);
        const others = parseKey(key, d);
        if (typeof others === "string") throw new ProfileError(source, where, others, KEY_RULE);
        const bad = others.find((o) => o.tier === tier || !labels.includes(o.tier));
        if (bad) {
          const why = bad.tier === tier
            ? `names ${tier} itself`
            : `${bad.tier} is not a tier of this profile`;
          throw new ProfileError(source, where, why, KEY_RULE);
        }
        const k = slowdownKeyOf(d, others, labels);
        if (Object.hasOwn(canon, k)) {
          throw new ProfileError(source, where, `repeats the key "${k}"`);
        }
        canon[k] = value;
      }
      out[d][tier] = canon;
    }
  }
  return out;
}

const KEY_RULE = "the other tiers' labels joined with +, each followed by :read or :write " +
  'when it does the other direction (e.g. "pfs", "pfs:write", "memory+pfs")';

// ------------------------------------------------------- hand-written → Profile

/** Checks what zod cannot: labels, latency order, every source's fields. */
function checkProfileDoc(doc: ProfileDoc, raw: unknown, source: string): void {
  const labels = Object.keys(doc.tiers);
  if (labels.length === 0) throw new ProfileError(source, "tiers", "has no tier", ALLOWED.tiers);
  for (const label of labels) {
    if (!LABEL.test(label)) {
      throw new ProfileError(
        source,
        formatPath(["tiers", label]),
        "is not a tier label",
        LABEL_RULE,
      );
    }
    for (const d of DIRECTIONS) {
      const lat = doc.tiers[label]![`${d}_lat_us`];
      if (lat && lat.p99 < lat.p50) {
        const at = formatPath(["tiers", label, `${d}_lat_us`, "p99"]);
        throw new ProfileError(source, at, `${lat.p99} is below p50 ${lat.p50}`, ALLOWED.p99);
      }
    }
  }
  for (const [i, s] of (doc.sources ?? []).entries()) checkSource(s, i, raw, source);
}

/** A source names figures that exist, says what it rests on and how a derivation goes. */
function checkSource(
  s: z.infer<typeof sourceSchema>,
  i: number,
  raw: unknown,
  source: string,
): void {
  for (const [j, field] of s.fields.entries()) {
    const path = parsePath(field);
    if (!path || valueAt(raw, path) === undefined) {
      const problem = `"${field}" names nothing in this document`;
      throw new ProfileError(
        source,
        formatPath(["sources", i, "fields", j]),
        problem,
        ALLOWED.fields,
      );
    }
  }
  if (s.basis === "derived" && s.derivation === undefined) {
    const at = formatPath(["sources", i, "derivation"]);
    throw new ProfileError(source, at, 'is missing (basis "derived")', ALLOWED.derivation);
  }
  if (s.basis !== "assumption" && s.citation === undefined && s.url === undefined) {
    const at = formatPath(["sources", i, "citation"]);
    throw new ProfileError(
      source,
      at,
      `is missing, and so is url (basis "${s.basis}")`,
      ALLOWED.citation,
    );
  }
}

/** `T` without explicit `undefined` values (optional properties stay optional). */
type Defined<T> = { [K in keyof T]: Exclude<T[K], undefined> };

/** Copies the defined properties of `from` (exactOptionalPropertyTypes forbids explicit undefined). */
function defined<T extends object>(from: T): Defined<T> {
  return Object.fromEntries(Object.entries(from).filter(([, v]) => v !== undefined)) as Defined<T>;
}

function fromProfileDoc(doc: ProfileDoc, raw: unknown, source: string): Profile {
  checkProfileDoc(doc, raw, source);
  const labels = Object.keys(doc.tiers);
  const tiers: Record<string, ProfileTier> = {};
  for (const label of labels) {
    const { concurrency, ...tier } = doc.tiers[label]!;
    tiers[label] = defined({ label, ...tier, measured_with: "stated" as const });
    if (concurrency) tiers[label].concurrency = statedConcurrency(concurrency, label, source);
  }
  const { name, ...host } = doc.host;
  const profile: Profile = {
    source,
    schema: PROFILE_SCHEMA,
    host_name: name,
    created: doc.created,
    tiers,
    host: defined(host),
    sources: (doc.sources ?? []).map((s) => defined(s)),
    notes: [],
  };
  if (doc.description !== undefined) profile.description = doc.description;
  if (doc.scaling) profile.scaling = statedScaling(doc.scaling, tiers, source);
  if (doc.contention) {
    profile.contention = defined({
      basis: "stated" as const,
      tiers: labels,
      slowdown: canonicalMatrix(doc.contention.slowdown, labels, source),
      note: doc.contention.note,
    });
  }
  return profile;
}

// ------------------------------------------------------------ result → Profile

/** A tier the result measured: its label, kind and `--tier` text. */
interface ResultTier {
  readonly label: string;
  readonly kind: ProfileTierKind;
  readonly spec: string;
}

/** The kind named by `--tier` text, when it is a profile tier kind. */
function specKind(spec: string): ProfileTierKind | undefined {
  if (spec.startsWith("s3://")) return "s3";
  const kind = spec.slice(0, spec.indexOf(":"));
  return (PROFILE_TIER_KINDS as readonly string[]).includes(kind)
    ? kind as ProfileTierKind
    : undefined;
}

/** The directory of a file-backed tier, or the s3 URL. */
function specPath(spec: string): string {
  return spec.startsWith("s3://") ? spec : spec.slice(spec.indexOf(":") + 1);
}

/**
 * Runs that are a tier's own points (a contention document's runs are its
 * matrix's, and the concurrency curves' runs are the curves').
 */
function pointRuns(doc: ResultDoc): ResultRun[] {
  if (doc.kind === "contention") return [];
  const curves = concurrencyRunNames(doc.concurrency);
  return doc.runs.filter((r) => !curves.has(r.name));
}

/**
 * The tiers of a result: the contention matrix's, labelled as it labels
 * them, then any other tier its runs used, labelled by the same rule (the
 * kind, numbered when two share one).
 */
function resultTiers(doc: ResultDoc): ResultTier[] {
  const out: ResultTier[] = [];
  const c = doc.contention;
  for (const label of c?.tiers ?? []) {
    const spec = c?.pattern.tiers[label]?.spec ?? label;
    const kind = specKind(spec);
    if (kind) out.push({ label, kind, spec });
  }
  const rest: { kind: ProfileTierKind; spec: string }[] = [];
  for (const run of pointRuns(doc)) {
    const kind = specKind(run.options.tier);
    const spec = run.options.tier;
    if (kind && !out.some((t) => t.spec === spec) && !rest.some((t) => t.spec === spec)) {
      rest.push({ kind, spec });
    }
  }
  const taken = new Set(out.map((t) => t.label));
  for (const t of rest) {
    const shared = rest.filter((x) => x.kind === t.kind).length > 1 || taken.has(t.kind);
    let n = 1;
    let label = shared ? `${t.kind}${n}` : t.kind;
    while (taken.has(label)) label = `${t.kind}${++n}`;
    taken.add(label);
    out.push({ label, ...t });
  }
  return out;
}

/** Whether a run is one of the profile pattern's points on `tier`, in `direction`. */
function isPoint(run: ResultRun, tier: ResultTier, direction: Direction): boolean {
  const o = run.options;
  const engine = tier.kind === "s3" ? "s3" : "libaio";
  return run.status === "ok" && o.tier === tier.spec && o.rw === direction &&
    o.bs === PROFILE_PATTERN.bs && o.iodepth === PROFILE_PATTERN.iodepth &&
    o.numjobs === PROFILE_PATTERN.numjobs && o.engine === engine && run[direction].bw_bytes > 0;
}

/**
 * Whether a run is the profile's mixed point on `tier`: randrw, half reads, at
 * the profile pattern's bs with twice its depth in flight — a read stream and
 * a write stream, each at the pattern's depth, as the workloads run them.
 */
function isMixedPoint(run: ResultRun, tier: ResultTier): boolean {
  const o = run.options;
  return run.status === "ok" && o.tier === tier.spec && o.rw === "randrw" &&
    o.rwmixread === 50 && o.bs === PROFILE_PATTERN.bs &&
    o.iodepth === 2 * PROFILE_PATTERN.iodepth && o.numjobs === PROFILE_PATTERN.numjobs &&
    o.engine === "libaio" && run.read.bw_bytes > 0 && run.write.bw_bytes > 0;
}

/** Latency percentiles of a run's direction, µs. */
function latencyOf(run: ResultRun | undefined, direction: Direction): LatencyUs | undefined {
  const p = run?.[direction].lat_ns?.percentile;
  const p50 = p?.["50.000000"];
  const p99 = p?.["99.000000"];
  if (p50 === undefined || p99 === undefined || !(p50 > 0)) return undefined;
  const us = (ns: number) => Math.round(ns / 100) / 10;
  return { p50: us(p50), p99: us(p99) };
}

/** A tier from its runs and where they came from. */
function tierFrom(
  t: ResultTier,
  runs: { read: ResultRun | undefined; write: ResultRun | undefined },
  figures: { read: number; write: number; bs: number; iodepth: number },
  measuredWith: MeasuredWith,
): ProfileTier {
  return defined({
    label: t.label,
    kind: t.kind,
    read_bw_bytes: figures.read,
    write_bw_bytes: figures.write,
    bs: figures.bs,
    iodepth: figures.iodepth,
    measured_with: measuredWith,
    runs: [runs.read?.name, runs.write?.name].filter((n): n is string => n !== undefined),
    read_lat_us: latencyOf(runs.read, "read"),
    write_lat_us: latencyOf(runs.write, "write"),
    path: specPath(t.spec),
  });
}

/**
 * A tier's figures from a result, or why there are none. Its mixed
 * bandwidths come from the contention matrix's read and write jobs at once
 * (`contention.self`) where measured — the workloads' pattern: a read stream
 * and a write stream — else from the bench's randrw point.
 */
function resultTier(doc: ResultDoc, t: ResultTier): ProfileTier | string {
  const tier = resultTierAlone(doc, t);
  const self = doc.contention?.self?.[t.label];
  if (typeof tier === "string" || !self || !(self.read_bw_bytes > 0 && self.write_bw_bytes > 0)) {
    return tier;
  }
  tier.mixed_read_bw_bytes = self.read_bw_bytes;
  tier.mixed_write_bw_bytes = self.write_bw_bytes;
  const name = `${t.label} read+write`;
  tier.runs = [
    ...(tier.runs ?? []).filter((r) => !isMixedRunName(doc, r)),
    `${t.label} read ${name}`,
    `${t.label} write ${name}`,
  ];
  return tier;
}

/** Whether `name` is a randrw run of `doc` (the bench's mixed point, replaced by the matrix's). */
function isMixedRunName(doc: ResultDoc, name: string): boolean {
  return doc.runs.some((r) => r.name === name && r.options.rw === "randrw");
}

/** A tier's read and write figures (and the randrw mixed point) from a result. */
function resultTierAlone(doc: ResultDoc, t: ResultTier): ProfileTier | string {
  // the workloads open file and pfs tiers with O_DIRECT where the mount takes it, as the matrix
  // did; a point measured the other way (bench's pfs points are buffered, as IOR runs by
  // default) says nothing of what a plan's streams get — on CephFS the buffered reads came from
  // ceph-fuse's cache at 14 GB/s while the O_DIRECT ones ran at 0.2 GB/s — so the matrix's
  // figures of the tier alone are taken instead
  const direct = doc.contention?.pattern.tiers[t.label]?.direct;
  const points = pointRuns(doc).filter((r) =>
    direct === undefined || r.options.direct === undefined || r.options.direct === direct
  );
  const read = points.find((r) => isPoint(r, t, "read"));
  const write = points.find((r) => isPoint(r, t, "write"));
  if (read && write) {
    const figures = {
      read: read.read.bw_bytes,
      write: write.write.bw_bytes,
      ...PROFILE_PATTERN,
    };
    const tier = tierFrom(t, { read, write }, figures, t.kind === "s3" ? "s3-runs" : "libaio-runs");
    const mixed = points.find((r) => isMixedPoint(r, t));
    if (mixed) {
      tier.mixed_read_bw_bytes = mixed.read.bw_bytes;
      tier.mixed_write_bw_bytes = mixed.write.bw_bytes;
      tier.runs = [...(tier.runs ?? []), mixed.name];
    }
    return tier;
  }
  const c = doc.contention;
  const alone = c?.alone[t.label];
  const shape = c && Number.isInteger(c.pattern.bs) && c.pattern.bs > 0 &&
    Number.isInteger(c.pattern.iodepth) && c.pattern.iodepth > 0;
  if (c && shape && alone && alone.read_bw_bytes > 0 && alone.write_bw_bytes > 0) {
    const named = (d: Direction) => doc.runs.find((r) => r.name === `${t.label} ${d} alone`);
    const figures = {
      read: alone.read_bw_bytes,
      write: alone.write_bw_bytes,
      bs: c.pattern.bs,
      iodepth: c.pattern.iodepth,
    };
    return tierFrom(t, { read: named("read"), write: named("write") }, figures, "contention-alone");
  }
  const missing = DIRECTIONS.filter((d) => !(d === "read" ? read : write));
  const matrix = !c
    ? "and no contention matrix"
    : shape
    ? "and the contention matrix has no figures of it alone"
    : `and the contention matrix's pattern has no request size and depth (bs ${c.pattern.bs}, ` +
      `iodepth ${c.pattern.iodepth})`;
  return `${t.label}: no ${missing.join(" or ")} run of 1 MiB at depth 8 that ended ok, ${matrix}`;
}

/** The matrix of a result, as the profile keeps it. */
function resultContention(c: ResultContention, source: string): ProfileContention {
  const out: ProfileContention = {
    basis: "measured",
    tiers: c.tiers,
    slowdown: canonicalMatrix(c.slowdown, c.tiers, source),
    alone: c.alone,
    status: c.status,
  };
  if (c.pattern.bs > 0) out.bs = c.pattern.bs;
  if (c.pattern.runtime_ms > 0) out.runtime_ms = c.pattern.runtime_ms;
  const moved = (
    g: { members: Record<string, { read_bw_bytes: number; write_bw_bytes: number }> },
  ) => Object.values(g.members).every((x) => x.read_bw_bytes > 0 && x.write_bw_bytes > 0);
  const bandwidths = (members: Record<string, { read_bw_bytes: number; write_bw_bytes: number }>) =>
    Object.fromEntries(
      Object.entries(members).map((
        [t, x],
      ) => [t, { read_bw_bytes: x.read_bw_bytes, write_bw_bytes: x.write_bw_bytes }]),
    );
  const at = (c.together_at ?? []).filter(moved);
  if (at.length > 0) {
    out.together_at = Object.fromEntries(
      at.map((g) => [g.key, { processes: g.processes, members: bandwidths(g.members) }]),
    );
  }
  const together = (c.together ?? []).filter(moved);
  if (together.length > 0) {
    out.together = Object.fromEntries(together.map((g) => [g.key, bandwidths(g.members)]));
  }
  return out;
}

const RESULT_HELP = "the result of `deno task bench` (kind profile), `tierbench contention`, or " +
  "`tierbench run` of 1 MiB sequential reads and writes at --iodepth 8 (--engine libaio, or s3)";

function fromResultDoc(doc: ResultDoc, source: string): Profile {
  if (!RESULT_KINDS.includes(doc.kind)) {
    const problem = `"${doc.kind}": a ${doc.kind} result carries no tier figures`;
    throw new ProfileError(source, "kind", problem, RESULT_HELP);
  }
  const tiers: Record<string, ProfileTier> = {};
  const notes: string[] = [];
  for (const t of resultTiers(doc)) {
    const tier = resultTier(doc, t);
    if (typeof tier === "string") notes.push(tier);
    else tiers[t.label] = tier;
  }
  if (Object.keys(tiers).length === 0) {
    const why = notes.length > 0 ? notes.join("; ") : "it measured no storage tier";
    throw new ProfileError(source, "runs", `no usable tier figures (${why})`, RESULT_HELP);
  }
  if (doc.status !== "ok") {
    notes.push(`the result's status is ${doc.status}: runs that ended ok only`);
  }
  const c = doc.contention;
  if (c && c.status !== "ok") {
    notes.push(`the contention matrix's status is ${c.status}: groups so far`);
  }
  const profile: Profile = {
    source,
    schema: RESULT_SCHEMA,
    kind: doc.kind,
    host_name: doc.host.hostname,
    created: doc.finished ?? doc.started,
    tiers,
    host: defined({
      memory_bytes: doc.host.memory_bytes,
      cpus: doc.host.cores,
      cpu_model: doc.host.cpu_model,
    }),
    sources: [],
    notes,
  };
  if (c && c.tiers.length > 0) profile.contention = resultContention(c, source);
  if (doc.concurrency) measuredConcurrency(doc.concurrency, tiers, notes);
  const scaling = doc.scaling && measuredScaling(doc.scaling, tiers, notes);
  if (scaling && Object.keys(scaling).length > 0) profile.scaling = scaling;
  return profile;
}

// ------------------------------------------------------------------- loading

/**
 * Reads a profile from a parsed JSON document: a hand-written profile
 * (`tierbench/profile@1`) or a tierbench result (`tierbench/result@1`, kind
 * `profile`, `contention` or `run`), normalized to one {@linkcode Profile}.
 * `source` names the document in messages (usually its path).
 *
 * @throws {ProfileError} naming the JSON path of the first bad field and what
 * it accepts; for an unknown schema, the schemas accepted; for a result
 * without usable tier figures, what each tier lacks.
 *
 * @example
 * ```ts
 * import { loadProfile } from "./profile.ts";
 * const p = loadProfile({
 *   schema: "tierbench/profile@1",
 *   created: "2026-11-21",
 *   host: { name: "n1", memory_bytes: 512 * 2 ** 30, cpus: 64 },
 *   tiers: { file: { kind: "file", read_bw_bytes: 6e9, write_bw_bytes: 3e9, bs: 1048576, iodepth: 8 } },
 * }, "inline");
 * console.assert(p.tiers.file!.measured_with === "stated" && p.contention === undefined);
 * ```
 */
export function loadProfile(json: unknown, source: string): Profile {
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    throw new ProfileError(
      source,
      "",
      `${describeValue(json)} is not a JSON object`,
      "a profile or result document",
    );
  }
  if (isFioJson(json)) json = fromFioJson(json, source);
  const schema = (json as Record<string, unknown>).schema;
  const accepted = ACCEPTED_SCHEMAS.map((s) => `"${s}"`).join(" or ") + " (or fio's JSON)";
  if (schema === PROFILE_SCHEMA) {
    const parsed = profileDocSchema.safeParse(json);
    if (!parsed.success) throw issueError(source, json, parsed.error.issues);
    return fromProfileDoc(parsed.data, json, source);
  }
  if (schema === RESULT_SCHEMA) {
    const parsed = resultDocSchema.safeParse(json);
    if (!parsed.success) throw issueError(source, json, parsed.error.issues);
    return fromResultDoc(parsed.data, source);
  }
  const problem = schema === undefined
    ? "is missing"
    : `${describeValue(schema)} is not a schema this reads`;
  throw new ProfileError(source, "schema", problem, accepted);
}

/**
 * Reads and loads a profile file (see {@linkcode loadProfile}).
 *
 * @throws {ProfileError} when the file cannot be read or is not JSON, too.
 *
 * @example
 * ```ts ignore
 * const p = await readProfile("results/reference/dgx-a100-8gpu-nvme-s3.json");
 * ```
 */
export async function readProfile(path: string): Promise<Profile> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    const why = e instanceof Error ? e.name : String(e);
    throw new ProfileError(path, "", `cannot be read (${why})`, "a readable JSON file", {
      cause: e,
    });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new ProfileError(path, "", `is ${jsonProblem(e, text)}`, "a JSON document", {
      cause: e,
    });
  }
  return loadProfile(json, path);
}
