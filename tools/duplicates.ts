/**
 * The duplicates check: jscpd (pinned in deno.json's imports, run through
 * Deno's npm support) looks for exact clones of 6 lines or more in the
 * TypeScript sources, and the check fails on any clone outside tests that is
 * not in the checked-in list of known ones, tools/duplicates_known.json,
 * printing both of its places.
 *
 * A clone is "outside tests" when at least one of its two places is not a
 * test (`*_test.ts`, tests/, testdata/). The known list holds, for each pair
 * of files, how many clones they may share; it only shrinks: when a clone
 * goes away the check asks for its entry to go too. The targets are ≤ 3
 * clones outside tests and ≤ 15 in all; the check prints where the tree
 * stands against both.
 *
 * ```sh
 * deno task dup            # "duplicates: N clones outside tests (target ≤ 3), N in all (target ≤ 15), none new"
 * deno task dup --shrink   # also lowers the known list to what is left (never raises it)
 * ```
 *
 * @module
 */
import { join } from "node:path";

/** One exact clone: the same lines at two places. */
export interface Clone {
  /** Lines in the clone. */
  lines: number;
  first: ClonePlace;
  second: ClonePlace;
}

/** One of a clone's two places. */
export interface ClonePlace {
  /** Path relative to the repository root. */
  file: string;
  start: number;
  end: number;
}

/** A file pair the known list allows, and how many clones it may share. */
export interface KnownPair {
  files: [string, string];
  clones: number;
}

/** What {@linkcode compareClones} found. */
export interface DuplicatesReport {
  /** Clones with at least one place outside tests. */
  outside: Clone[];
  /** Every clone jscpd found. */
  total: number;
  /** Clones outside tests beyond what the known list allows for their pair. */
  fresh: Clone[];
  /** Known pairs that now share fewer clones than the list says. */
  stale: KnownPair[];
}

/** The targets the check reports against. */
export const TARGET = { outside: 3, total: 15 } as const;

/** Whether a path is a test or test data. */
export function isTestPath(file: string): boolean {
  return file.endsWith("_test.ts") || file.startsWith("tests/") || file.includes("/testdata/") ||
    file.startsWith("testdata/");
}

function pairKey(a: string, b: string): string {
  return a <= b ? `${a}\n${b}` : `${b}\n${a}`;
}

/**
 * Sorts the clones against the known list: which are new, which entries are stale.
 *
 * @example
 * ```ts
 * import { compareClones } from "./duplicates.ts";
 * const clone = {
 *   lines: 8,
 *   first: { file: "a.ts", start: 1, end: 8 },
 *   second: { file: "b.ts", start: 3, end: 10 },
 * };
 * const report = compareClones([clone], []);
 * if (report.fresh.length !== 1) throw new Error("a clone no list allows is new");
 * ```
 */
export function compareClones(
  clones: readonly Clone[],
  known: readonly KnownPair[],
): DuplicatesReport {
  const allowed = new Map(known.map((k) => [pairKey(...k.files), k.clones]));
  const seen = new Map<string, number>();
  const outside = clones.filter((c) => !isTestPath(c.first.file) || !isTestPath(c.second.file));
  const fresh: Clone[] = [];
  for (const clone of outside) {
    const key = pairKey(clone.first.file, clone.second.file);
    const count = (seen.get(key) ?? 0) + 1;
    seen.set(key, count);
    if (count > (allowed.get(key) ?? 0)) fresh.push(clone);
  }
  const stale = known.filter((k) => (seen.get(pairKey(...k.files)) ?? 0) < k.clones);
  return { outside, total: clones.length, fresh, stale } as DuplicatesReport;
}

/** One clone as two lines, `file:start-end` each. */
export function formatClone(clone: Clone): string {
  const place = (p: ClonePlace) => `${p.file}:${p.start}-${p.end}`;
  return `${clone.lines} lines: ${place(clone.first)}\n    ~ ${place(clone.second)}`;
}

interface JscpdPlace {
  name: string;
  start: number;
  end: number;
}

/** The clones in a jscpd JSON report (its `duplicates`). */
export function clonesOfReport(report: unknown): Clone[] {
  const duplicates = (report as { duplicates?: unknown }).duplicates;
  if (!Array.isArray(duplicates)) throw new Error("jscpd's report has no duplicates list");
  return duplicates.map((d: { lines: number; firstFile: JscpdPlace; secondFile: JscpdPlace }) => ({
    lines: d.lines,
    first: { file: d.firstFile.name, start: d.firstFile.start, end: d.firstFile.end },
    second: { file: d.secondFile.name, start: d.secondFile.start, end: d.secondFile.end },
  }));
}

/** The npm specifier deno.json pins jscpd to. */
async function jscpdSpecifier(root: string): Promise<string> {
  const config = JSON.parse(await Deno.readTextFile(join(root, "deno.json")));
  const specifier = config.imports?.jscpd;
  if (typeof specifier !== "string") throw new Error("deno.json's imports pin no jscpd");
  return specifier;
}

/** Runs jscpd on the tree at `root` and returns its clones. */
export async function findClones(root: string): Promise<Clone[]> {
  const out = await Deno.makeTempDir({ prefix: "tierbench-jscpd-" });
  try {
    const args = ["run", "--allow-read", "--allow-env", "--allow-sys", `--allow-write=${out}`];
    args.push(await jscpdSpecifier(root), "--min-lines", "6", "--format", "typescript");
    args.push("--gitignore", "--reporters", "json", "--output", out, "--silent", ".");
    const result = await new Deno.Command(Deno.execPath(), { args, cwd: root, stdout: "piped" })
      .output();
    if (!result.success) throw new Error(`jscpd exited with status ${result.code}`);
    return clonesOfReport(JSON.parse(await Deno.readTextFile(join(out, "jscpd-report.json"))));
  } finally {
    await Deno.remove(out, { recursive: true });
  }
}

/**
 * The known list lowered to the clones each pair still shares: entries only
 * go down or away, never up.
 *
 * @example
 * ```ts
 * import { shrinkKnown } from "./duplicates.ts";
 * const seen = [{ files: ["a.ts", "b.ts"] as [string, string], clones: 1 }];
 * const known = [{ files: ["a.ts", "b.ts"] as [string, string], clones: 3 }];
 * if (shrinkKnown(known, seen)[0]!.clones !== 1) throw new Error("the entry goes down");
 * ```
 */
export function shrinkKnown(known: readonly KnownPair[], seen: readonly KnownPair[]): KnownPair[] {
  const now = new Map(seen.map((k) => [pairKey(...k.files), k.clones]));
  return known
    .map((k) => ({ files: k.files, clones: Math.min(k.clones, now.get(pairKey(...k.files)) ?? 0) }))
    .filter((k) => k.clones > 0);
}

/** How many clones outside tests each pair of files shares. */
export function pairsOf(clones: readonly Clone[]): KnownPair[] {
  const counts = new Map<string, KnownPair>();
  for (const c of clones) {
    const files = [c.first.file, c.second.file].sort() as [string, string];
    const key = pairKey(...files);
    counts.set(key, { files, clones: (counts.get(key)?.clones ?? 0) + 1 });
  }
  return [...counts.values()];
}

/** Reads the known list. */
export async function readKnown(path: string): Promise<KnownPair[]> {
  const list = JSON.parse(await Deno.readTextFile(path));
  if (!Array.isArray(list.known)) throw new Error(`${path}: no "known" list`);
  return list.known;
}

if (import.meta.main) {
  const root = join(import.meta.dirname ?? ".", "..");
  const knownPath = join(root, "tools", "duplicates_known.json");
  const known = await readKnown(knownPath);
  const report = compareClones(await findClones(root), known);
  if (Deno.args.includes("--shrink")) {
    const shrunk = shrinkKnown(known, pairsOf(report.outside));
    await Deno.writeTextFile(knownPath, JSON.stringify({ known: shrunk }, null, 2) + "\n");
    report.stale = [];
  }
  const figures = `${report.outside.length} clones outside tests (target ≤ ${TARGET.outside}), ` +
    `${report.total} in all (target ≤ ${TARGET.total})`;
  for (const pair of report.stale) {
    console.error(
      `duplicates: ${pair.files.join(" ~ ")} now share fewer clones than the ${pair.clones} ` +
        `tools/duplicates_known.json allows: lower or remove its entry`,
    );
  }
  if (report.fresh.length > 0) {
    for (const clone of report.fresh) console.error(`new clone, ${formatClone(clone)}`);
    console.error(`duplicates: ${figures}, ${report.fresh.length} new: write each once`);
    Deno.exit(1);
  }
  console.log(`duplicates: ${figures}, none new`);
}
