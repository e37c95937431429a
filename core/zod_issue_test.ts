import assert from "node:assert/strict";
import { z } from "zod";
import { describeValue, describeZodIssue, formatPath, valueAt } from "./zod_issue.ts";

function issuesOf(schema: z.ZodType, input: unknown) {
  const parsed = schema.safeParse(input);
  assert.equal(parsed.success, false);
  return parsed.error!.issues;
}

Deno.test("describeZodIssue() without the input names the rule alone, and an enum's values as what is allowed", () => {
  const schema = z.object({ engine: z.enum(["psync", "libaio"]) });
  const d = describeZodIssue(issuesOf(schema, { engine: "io_uring" }));
  assert.deepEqual(d.path, ["engine"]);
  assert.equal(d.where, "engine");
  assert.equal(d.problem, "unknown value");
  assert.equal(d.allowed, "psync, libaio");
  assert.equal(d.count, 1);
});

Deno.test("describeZodIssue() without the input takes a custom message as the whole problem", () => {
  const schema = z.object({
    bs: z.string().refine(() => false, '"3q" is not a size'),
  });
  const d = describeZodIssue(issuesOf(schema, { bs: "3q" }));
  assert.equal(d.problem, '"3q" is not a size');
  assert.equal(d.allowed, undefined);
});

Deno.test("describeZodIssue() with the input quotes the value at fault", () => {
  const schema = z.object({
    a: z.object({ n: z.number().positive(), m: z.number().max(4) }),
    kind: z.enum(["memory", "file", "pfs"]),
    two: z.enum(["x", "y"]),
    when: z.string().refine(() => false, "is not a date"),
    list: z.array(z.number()).refine(() => false, "has no local path"),
  });
  const input = { a: { n: 0, m: 5 }, kind: "lustre", two: 1, when: "soon", list: [] };
  const [n, m, kind, two, when, list] = issuesOf(schema, input).map((i) =>
    describeZodIssue([i], { input })
  );
  assert.equal(n!.where, "a.n");
  assert.equal(n!.problem, "0 is too small (must be > 0)");
  assert.equal(m!.problem, "5 is too big (must be ≤ 4)");
  assert.equal(kind!.problem, '"lustre" is not one of "memory", "file", "pfs"');
  assert.equal(kind!.allowed, undefined, "the value list is in the problem already");
  assert.equal(two!.problem, '1 is not "x" or "y"');
  assert.equal(when!.problem, '"soon" is not a date');
  assert.equal(
    list!.problem,
    "has no local path",
    "an array is not quoted before a custom message",
  );
});

Deno.test("describeZodIssue() says a missing field is missing and a wrong type what it should be", () => {
  const schema = z.object({ bs: z.number(), cpus: z.number().int() });
  const input = { cpus: "64" };
  const [bs, cpus] = issuesOf(schema, input).map((i) => describeZodIssue([i], { input }));
  assert.equal(bs!.problem, "is missing");
  assert.equal(cpus!.problem, '"64" is not a number');
});

Deno.test("describeZodIssue() asks the caller what a field accepts, and counts the issues", () => {
  const schema = z.object({ x: z.number().min(1), y: z.number().min(1) });
  const input = { x: 0, y: 0 };
  const d = describeZodIssue(issuesOf(schema, input), {
    input,
    allowed: (path) => (path[0] === "x" ? "a count from 1" : undefined),
  });
  assert.equal(d.allowed, "a count from 1");
  assert.equal(d.count, 2);
});

Deno.test("describeZodIssue() names an unknown field with its path and the fields the object takes", () => {
  const schema = z.strictObject({ tiers: z.strictObject({ bs: z.number(), kind: z.string() }) });
  const input = { tiers: { bs: 1, kind: "file", read_bw: 1 } };
  const d = describeZodIssue(issuesOf(schema, input), {
    input,
    fields: (path) => (path[0] === "tiers" ? ["bs", "kind"] : []),
  });
  assert.equal(d.where, "tiers.read_bw");
  assert.equal(d.problem, "unknown field");
  assert.equal(d.allowed, "one of the fields bs, kind");
});

Deno.test("describeZodIssue() refuses an empty list of issues", () => {
  assert.throws(() => describeZodIssue([]), RangeError);
});

Deno.test("formatPath(), valueAt() and describeValue() write paths and values as messages quote them", () => {
  assert.equal(formatPath(["tiers", "nv:me", 0, "bs"]), 'tiers["nv:me"][0].bs');
  assert.equal(formatPath([]), "");
  assert.equal(valueAt({ a: [{ b: 2 }] }, ["a", 0, "b"]), 2);
  assert.equal(valueAt(null, ["a"]), undefined);
  assert.equal(describeValue(null), "null");
  assert.equal(describeValue({}), "an object");
  assert.equal(describeValue("x".repeat(50)), `"${"x".repeat(36)}…`);
});
