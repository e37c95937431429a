/**
 * What the property-based tests (fast-check) of the option parsers share: the
 * seed (printed; rerun a failure with `TIERBENCH_FUZZ_SEED=<seed>`), text a
 * user might type, and the check that an error is a ConfigError naming the
 * field.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { ConfigError } from "../core/errors.ts";

export const SEED = Number(Deno.env.get("TIERBENCH_FUZZ_SEED") ?? Date.now() % 2 ** 31);
console.log(`fuzz tests: fast-check seed ${SEED} (TIERBENCH_FUZZ_SEED=${SEED} to rerun)`);
export const RUNS = 400;

/** Text a user might type for a number or a size: near misses, extremes and noise. */
export const numberishText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    "",
    " ",
    "0",
    "-1",
    "1",
    "3k",
    "4k",
    "1m",
    "1e99",
    "1e9",
    "NaN",
    "Infinity",
    "-Infinity",
    "0x10",
    "1_000",
    "1.5",
    "0.5",
    "4096",
    "9".repeat(400),
    "1".repeat(20) + "k",
    "999999999h",
    "1 m",
    "1mb",
    "1kib",
    "true",
    "null",
    "{}",
    "-0",
    "+4",
    "4k ",
  ),
  fc.integer({ min: -1e6, max: 1e12 }).map(String),
  fc.double().map(String),
  fc.tuple(fc.nat(100000), fc.constantFrom("", "k", "m", "g", "t", "K", "ms", "s", "h", "x"))
    .map(([n, u]) => `${n}${u}`),
  fc.string({ maxLength: 12 }),
);

/** Text for `--tier`: the documented forms, near misses and noise. */
export const tierText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    "null:",
    "memory:",
    "file:",
    "file:/data",
    "pfs:/mnt/x",
    "s3://",
    "s3:///x",
    "s3://b/p",
    "s3:b",
    "nvme:/x",
    ":",
    "",
    "file",
    "FILE:/x",
    "null:/x",
  ),
  fc.tuple(fc.constantFrom("file:", "memory:", "pfs:", "s3://", "null:"), fc.string()).map((
    [k, p],
  ) => k + p),
  fc.string(),
);

/** Mostly absent (the default), so most cases get past the first field to the later checks. */
export const optional = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> =>
  fc.oneof({ arbitrary: fc.constant(undefined), weight: 4 }, { arbitrary: a, weight: 1 });
export const oneOfOrNoise = (values: readonly string[]) =>
  fc.oneof(fc.constantFrom(...values), fc.string({ maxLength: 10 }), numberishText);

/** A field name as ConfigError spells it: `--flag: ` at the start. */
function assertNamesField(e: ConfigError): void {
  assert.match(e.message, /^--[a-z][a-z0-9-]*: \S/, e.message);
  assert.equal(e.message.includes("\n"), false, e.message);
  assert.equal(e.message.startsWith(`--${e.field}: `), true, e.message);
}

/** Runs `fn` and says whether it threw a ConfigError (which it checks); rethrows anything else. */
export function configErrorOf(fn: () => unknown): ConfigError | undefined {
  try {
    fn();
    return undefined;
  } catch (e) {
    if (!(e instanceof ConfigError)) {
      throw new Error(`not a ConfigError: ${e instanceof Error ? e.name : typeof e}: ${e}`, {
        cause: e,
      });
    }
    assertNamesField(e);
    return e;
  }
}

export const params = { seed: SEED, numRuns: RUNS };

// deno-lint-ignore no-explicit-any
export type Json = any;
export type Path = (string | number)[];

/** Every path into `json` (objects and arrays), the root excluded; arrays sampled. */
export function pathsOf(json: Json, at: Path = [], out: Path[] = []): Path[] {
  if (json === null || typeof json !== "object") return out;
  const keys: (string | number)[] = Array.isArray(json)
    ? json.map((_, i) => i).filter((i) => i < 3 || i === json.length - 1)
    : Object.keys(json);
  for (const k of keys) {
    const p = [...at, k];
    out.push(p);
    pathsOf(json[k], p, out);
  }
  return out;
}

/** Values a hand-edited or damaged profile might hold. */
export const oddValue: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom(
    null,
    0,
    -1,
    1,
    1e99,
    -1e-300,
    Number.MAX_SAFE_INTEGER + 2,
    "",
    "NaN",
    "1e9",
    "fast",
    "memory",
    "file",
    "s3",
    "pfs",
    "tierbench/profile@1",
    "tierbench/result@1",
    "tierbench/profile@2",
    true,
    false,
    [],
    {},
    [1, 2],
    { read: 1 },
  ),
  fc.double(),
  fc.integer(),
  fc.string({ maxLength: 8 }),
  fc.jsonValue({ maxDepth: 2 }),
);

export type Mutation =
  | { op: "set"; pick: number; value: Json }
  | { op: "delete"; pick: number }
  | { op: "rename"; pick: number; name: string }
  | { op: "add"; pick: number; name: string; value: Json };

export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ op: fc.constant("set" as const), pick: fc.nat(), value: oddValue }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("delete" as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("rename" as const),
      pick: fc.nat(),
      name: fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom("memory", "file", "pfs", "s3")),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("add" as const),
      pick: fc.nat(),
      name: fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom("__proto__", "constructor")),
      value: oddValue,
    }),
  },
);

/** `doc` (a deep copy) with `m` applied at one of its paths. */
export function mutate(doc: Json, m: Mutation): { doc: Json; where: string } {
  const copy = structuredClone(doc);
  const paths = pathsOf(copy);
  const path = paths[m.pick % paths.length]!;
  const parent = path.slice(0, -1).reduce((o: Json, k) => o[k], copy);
  const key = path[path.length - 1]!;
  const where = `${m.op} ${JSON.stringify(path)}`;
  switch (m.op) {
    case "set":
      parent[key] = m.value;
      break;
    case "delete":
      if (Array.isArray(parent)) parent.splice(key as number, 1);
      else delete parent[key];
      break;
    case "rename":
      if (!Array.isArray(parent)) {
        const v = parent[key];
        delete parent[key];
        parent[m.name] = v;
      }
      break;
    case "add": {
      const target = parent[key];
      if (target !== null && typeof target === "object" && !Array.isArray(target)) {
        Object.defineProperty(target, m.name, {
          value: m.value,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      break;
    }
  }
  return { doc: copy, where };
}
