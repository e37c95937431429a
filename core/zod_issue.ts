/**
 * One wording for zod's validation issues, for every error that reports a
 * refused option or document field: the field at fault, what is wrong with
 * it (quoting the value when the input is known), and what it accepts. Each
 * caller puts the parts into its own error (`--flag: problem (allowed: …)`,
 * `FILE: path: problem; use …`).
 *
 * @module
 */

import type { z } from "zod";

/** A zod issue, as `safeParse` reports it. */
export type ZodIssue = z.core.$ZodIssue;

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * A JSON path as messages and `sources` write it: `.name` for plain keys,
 * `["key"]` for others, `[i]` for array items.
 *
 * @example
 * ```ts
 * import { formatPath } from "./zod_issue.ts";
 * console.assert(formatPath(["contention", "slowdown", "read", "file", "pfs:write"]) ===
 *   'contention.slowdown.read.file["pfs:write"]');
 * console.assert(formatPath(["sources", 2, "fields"]) === "sources[2].fields");
 * ```
 */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const p of path) {
    if (typeof p === "number") out += `[${p}]`;
    else if (IDENTIFIER.test(String(p))) out += out ? `.${String(p)}` : String(p);
    else out += `[${JSON.stringify(String(p))}]`;
  }
  return out;
}

/**
 * The value at `path` in `root`; undefined where the path leaves the objects.
 *
 * @example
 * ```ts
 * import { valueAt } from "./zod_issue.ts";
 * console.assert(valueAt({ a: [1, { b: 2 }] }, ["a", 1, "b"]) === 2);
 * console.assert(valueAt({ a: 1 }, ["a", "b"]) === undefined);
 * ```
 */
export function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let v = root;
  for (const p of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<PropertyKey, unknown>)[p];
  }
  return v;
}

/**
 * A value as an error message quotes it: JSON for a scalar (cut at 40
 * characters), "an object", "an array", "null" or "nothing".
 *
 * @example
 * ```ts
 * import { describeValue } from "./zod_issue.ts";
 * console.assert(describeValue("x") === '"x"' && describeValue([1]) === "an array");
 * console.assert(describeValue(undefined) === "nothing");
 * ```
 */
export function describeValue(v: unknown): string {
  if (v === undefined) return "nothing";
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "object") return "an object";
  const text = JSON.stringify(v);
  return text.length > 40 ? `${text.slice(0, 37)}…` : text;
}

const TYPE_NAMES: Record<string, string> = {
  number: "a number",
  int: "an integer",
  string: "a string",
  object: "an object",
  record: "an object",
  array: "an array",
  boolean: "true or false",
};

/** Options of {@linkcode describeZodIssue}. */
export interface DescribeIssueOptions {
  /**
   * The value that was parsed. With it, problems quote the value at fault
   * (`"64" is not a number`, `is missing`); without it they state the rule
   * alone (`is not a number`, `unknown value`), and a custom issue's message
   * is taken as the whole problem.
   */
  readonly input?: unknown;
  /** What the field at `path` accepts, in words; undefined where there is nothing to say. */
  readonly allowed?: (path: readonly PropertyKey[]) => string | undefined;
  /** The fields an object at `path` takes, listed when an unknown field is refused. */
  readonly fields?: (path: readonly PropertyKey[]) => readonly string[];
}

/** A zod issue in words: where, what, and what the field accepts. */
export interface IssueDescription {
  /** The path of the field at fault (for an unknown field, ending with its name). */
  readonly path: readonly PropertyKey[];
  /** {@linkcode path} as {@linkcode formatPath} writes it; `""` for the whole input. */
  readonly where: string;
  /** What is wrong, in words (`0 is too small (must be > 0)`, `unknown field`). */
  readonly problem: string;
  /**
   * What the field accepts: the caller's words, else the values of an enum
   * (`psync, libaio`) or the fields of an object (`one of the fields a, b`).
   */
  readonly allowed: string | undefined;
  /** How many issues the parse reported (the first is described). */
  readonly count: number;
}

/**
 * Describes the first of `issues` (from a failed `safeParse`) as one line's
 * parts: the field at fault, the problem and what the field accepts.
 *
 * @throws {RangeError} when `issues` is empty.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { describeZodIssue } from "./zod_issue.ts";
 * const input = { rw: "io_uring", bs: 0 };
 * const schema = z.object({ rw: z.enum(["read", "write"]), bs: z.number().positive() });
 * const { issues } = schema.safeParse(input).error!;
 * const d = describeZodIssue(issues);
 * console.assert(d.where === "rw" && d.problem === "unknown value" && d.allowed === "read, write");
 * const q = describeZodIssue(issues.slice(1), { input });
 * console.assert(q.where === "bs" && q.problem === "0 is too small (must be > 0)");
 * ```
 */
export function describeZodIssue(
  issues: readonly ZodIssue[],
  options: DescribeIssueOptions = {},
): IssueDescription {
  const issue = issues[0];
  if (issue === undefined) throw new RangeError("describeZodIssue() needs at least one issue");
  const known = "input" in options;
  let path = issue.path as PropertyKey[];
  let problem: string;
  let allowed: string | undefined;
  if (issue.code === "unrecognized_keys") {
    const fields = options.fields?.(path) ?? [];
    if (fields.length > 0) allowed = `one of the fields ${fields.join(", ")}`;
    path = [...path, issue.keys[0]!];
    problem = "unknown field";
  } else {
    problem = problemOf(issue, known, valueAt(options.input, path));
    allowed = options.allowed?.(path);
    if (allowed === undefined && issue.code === "invalid_value" && !known) {
      allowed = issue.values.map(String).join(", ");
    }
  }
  return { path, where: formatPath(path), problem, allowed, count: issues.length };
}

/** The problem an issue reports, with the value at fault when it is `known`. */
function problemOf(issue: ZodIssue, known: boolean, value: unknown): string {
  // "0 is too small": the value, then the rule; without the input, the rule alone
  const is = (rule: string) => (known ? `${describeValue(value)} ${rule}` : rule);
  switch (issue.code) {
    case "invalid_type":
      if (known && value === undefined) return "is missing";
      return is(`is not ${TYPE_NAMES[issue.expected] ?? issue.expected}`);
    case "too_small":
      return issue.origin === "array" || issue.origin === "string"
        ? is("is too short")
        : is(`is too small (must be ${issue.inclusive ? "≥" : ">"} ${issue.minimum})`);
    case "too_big":
      return is(`is too big (must be ${issue.inclusive ? "≤" : "<"} ${issue.maximum})`);
    case "invalid_value": {
      if (!known) return "unknown value";
      const values = issue.values.map((v) => JSON.stringify(v));
      return is(
        `is not ${values.length > 2 ? `one of ${values.join(", ")}` : values.join(" or ")}`,
      );
    }
    case "invalid_format":
      return is(`is not ${issue.format === "url" ? "a URL" : "valid"}`);
    case "custom":
      // a custom message is a predicate ("is not an ISO 8601 date"); an object is not quoted
      return known && (value === null || typeof value !== "object")
        ? `${describeValue(value)} ${issue.message}`
        : issue.message;
    default:
      return is("is not valid");
  }
}
