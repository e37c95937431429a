/**
 * The function-length check: every named function, method or function
 * value outside tests whose body runs over 80 lines, read with the
 * TypeScript compiler's own parser (pinned in deno.json's imports). The
 * check fails on a long function not in the checked-in list,
 * tools/function_lengths_known.json, which holds each known one with why
 * it is longer and only shrinks: a function that got shorter is asked to
 * leave the list.
 *
 * ```sh
 * deno task lengths   # "function lengths: N over 80 lines, none new"
 * ```
 *
 * @module
 */
import ts from "typescript";
import { join, relative } from "node:path";
import { isTestPath } from "./duplicates.ts";

/** Lines a function may span. */
export const LIMIT = 80;

/** One function over the limit. */
export interface LongFunction {
  /** Path relative to the repository root. */
  file: string;
  /** The function's name: `Class.method`, `name`, or `(anonymous)@line`. */
  name: string;
  /** Lines from its first to its last, both counted. */
  lines: number;
}

/** A known long function and why it stays long. */
export interface KnownLong {
  file: string;
  name: string;
  why: string;
}

/**
 * A function's name: its own, `Class.method`, the variable or property it
 * is assigned to, or, for a callback, `outer/callback` after the function
 * around it (no line numbers, so the known list outlives edits above it).
 */
function nameOf(node: ts.Node, source: ts.SourceFile): string {
  const own = (node as { name?: ts.Node }).name?.getText(source);
  const owner = node.parent;
  if (own !== undefined && ts.isClassLike(owner)) return `${owner.name?.text ?? "class"}.${own}`;
  if (own !== undefined) return own;
  if (ts.isVariableDeclaration(owner) || ts.isPropertyAssignment(owner)) {
    return owner.name.getText(source);
  }
  for (let up = owner; up !== undefined; up = up.parent) {
    if (ts.isFunctionLike(up)) return `${nameOf(up, source)}/callback`;
  }
  return "(top-level callback)";
}

/**
 * The functions in one TypeScript source longer than {@linkcode LIMIT} lines.
 *
 * @example
 * ```ts
 * import { longFunctions } from "./function_lengths.ts";
 * const body = Array.from({ length: 90 }, (_, i) => `  const a${i} = ${i};`).join("\n");
 * const found = longFunctions("a.ts", `export function big() {\n${body}\n}\nfunction small() {}\n`);
 * if (found.length !== 1 || found[0]!.name !== "big" || found[0]!.lines !== 92) {
 *   throw new Error("one long function, named, with its lines");
 * }
 * ```
 */
export function longFunctions(file: string, text: string): LongFunction[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: LongFunction[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && (node as { body?: ts.Node }).body !== undefined) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = last - first + 1;
      if (lines > LIMIT) found.push({ file, name: nameOf(node, source), lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The long functions of every TypeScript source under `root` that git tracks, tests aside. */
export async function findLongFunctions(root: string): Promise<LongFunction[]> {
  const listed = await new Deno.Command("git", { args: ["ls-files", "*.ts"], cwd: root }).output();
  if (!listed.success) throw new Error("git ls-files failed: the check needs a git checkout");
  const files = new TextDecoder().decode(listed.stdout).split("\n").filter((f) => f !== "");
  const found: LongFunction[] = [];
  for (const file of files.filter((f) => !isTestPath(f))) {
    found.push(
      ...longFunctions(relative(root, join(root, file)), await Deno.readTextFile(join(root, file))),
    );
  }
  return found.sort((a, b) => b.lines - a.lines);
}

/** What the known list says of the functions found: which are new, which entries are stale. */
export function compareLengths(
  found: readonly LongFunction[],
  known: readonly KnownLong[],
): { fresh: LongFunction[]; stale: KnownLong[] } {
  const key = (f: { file: string; name: string }) => `${f.file}\n${f.name}`;
  const knownKeys = new Set(known.map(key));
  const foundKeys = new Set(found.map(key));
  return {
    fresh: found.filter((f) => !knownKeys.has(key(f))),
    stale: known.filter((k) => !foundKeys.has(key(k))),
  };
}

if (import.meta.main) {
  const root = join(import.meta.dirname ?? ".", "..");
  const knownPath = join(root, "tools", "function_lengths_known.json");
  const known: KnownLong[] = JSON.parse(await Deno.readTextFile(knownPath)).known;
  const found = await findLongFunctions(root);
  const { fresh, stale } = compareLengths(found, known);
  if (Deno.args.includes("--list")) {
    for (const f of found) console.log(`${f.lines}\t${f.file}\t${f.name}`);
  }
  for (const k of stale) {
    console.error(
      `function lengths: ${k.file} ${k.name} is no longer over ${LIMIT} lines: ` +
        `take it out of tools/function_lengths_known.json`,
    );
  }
  for (const f of fresh) {
    console.error(
      `function lengths: new: ${f.file} ${f.name}, ${f.lines} lines (over ${LIMIT}): ` +
        "split it into named steps, or add it to tools/function_lengths_known.json with why",
    );
  }
  console.log(
    `function lengths: ${found.length} over ${LIMIT} lines, ` +
      (fresh.length === 0 ? "none new" : `${fresh.length} new`),
  );
  if (fresh.length > 0 || stale.length > 0) Deno.exit(1);
}
