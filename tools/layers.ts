/**
 * The layers check: every module imports only from its own folder or from
 * folders below it, no module imports another folder's private `_name.ts`,
 * and no two modules import each other, directly or around a loop.
 *
 * The order, lowest first (docs/architecture.md draws it):
 *
 * ```
 * core → trace → cluster → tiers → engines → workloads → schema → solver → bench → report → cli
 *      → main.ts, mod.ts → tools → tests
 * ```
 *
 * bench/ ranks above solver/: the sweep writes DeepSpeed's aio block with
 * the solver's exporter and replay runs a plan. A test
 * (`x_test.ts`) sits with its folder but may also import the helpers in
 * tests/. Type-only imports count: a type is a dependency too.
 *
 * ```sh
 * deno task layers          # prints "layers: N modules, N imports, ok" or each violation
 * ```
 *
 * @module
 */
import { dirname, join, normalize, relative } from "node:path";

/** The folders in import order; a folder may import only folders of a lower rank. */
export const LAYERS: readonly (readonly string[])[] = [
  ["core"],
  ["trace"],
  ["cluster"],
  ["tiers"],
  ["engines"],
  ["workloads"],
  ["schema"],
  ["solver"],
  ["bench"],
  ["report"],
  ["cli"],
  ["main.ts", "mod.ts"],
  ["tools"],
  ["tests"],
];

/** One import that breaks the rule, or one loop of modules. */
export interface LayerViolation {
  kind: "upward" | "sibling" | "private" | "cycle" | "unplaced";
  /** The importing module (or, for a cycle, the loop joined by " → "). */
  from: string;
  /** The imported module ("" for a cycle). */
  to: string;
}

/** What {@linkcode checkLayers} found. */
export interface LayerReport {
  modules: number;
  imports: number;
  violations: LayerViolation[];
}

const SPEC =
  /^(?:import|export)\b[^"';]*?\bfrom\s*["'](\.{1,2}\/[^"']+)["']|^import\s+["'](\.{1,2}\/[^"']+)["']|\bimport\(\s*["'](\.{1,2}\/[^"']+)["']|new URL\(\s*["'](\.{1,2}\/[^"']+\.ts)["']/gm;

/** The relative `.ts` specifiers a module's code imports (not those in its comments). */
export function importsOf(source: string): string[] {
  const code = source
    .replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, " "))
    .replace(/(^|[^:"'`])\/\/[^\n]*/g, "$1");
  const specs: string[] = [];
  for (const m of code.matchAll(SPEC)) {
    const spec = m[1] ?? m[2] ?? m[3] ?? m[4];
    if (spec?.endsWith(".ts")) specs.push(spec);
  }
  return specs;
}

/** The rank of a repo-relative module path in {@linkcode LAYERS}, or undefined when it has none. */
export function rankOf(path: string): number | undefined {
  const top = path.includes("/") ? path.slice(0, path.indexOf("/")) : path;
  if (!path.includes("/") && path.endsWith("_test.ts")) return LAYERS.length - 1;
  const i = LAYERS.findIndex((names) => names.includes(top));
  return i < 0 ? undefined : i;
}

function folderOf(path: string): string {
  return path.includes("/") ? path.slice(0, path.indexOf("/")) : "";
}

async function* tsFiles(root: string, dir = ""): AsyncGenerator<string> {
  for await (const e of Deno.readDir(join(root, dir))) {
    const path = dir ? `${dir}/${e.name}` : e.name;
    if (e.isDirectory) {
      if (e.name.startsWith(".") || e.name === "results" || e.name === "node_modules") continue;
      yield* tsFiles(root, path);
    } else if (e.isFile && e.name.endsWith(".ts")) yield path;
  }
}

/**
 * Reads every `.ts` module under `root` and checks its imports against
 * {@linkcode LAYERS}.
 *
 * @example
 * ```ts ignore
 * import { checkLayers } from "./layers.ts";
 * const report = await checkLayers(".");
 * console.log(report.violations.length === 0 ? "ok" : report.violations);
 * ```
 */
export async function checkLayers(root: string): Promise<LayerReport> {
  const graph = new Map<string, string[]>();
  for await (const path of tsFiles(root)) {
    const source = await Deno.readTextFile(join(root, path));
    graph.set(
      path,
      importsOf(source).map((s) => relative(root, normalize(join(root, dirname(path), s)))),
    );
  }
  const violations: LayerViolation[] = [];
  let imports = 0;
  for (const [from, targets] of [...graph].sort(([a], [b]) => a.localeCompare(b))) {
    const rf = rankOf(from);
    if (rf === undefined) {
      violations.push({ kind: "unplaced", from, to: "" });
      continue;
    }
    const isTest = from.endsWith("_test.ts");
    for (const to of new Set(targets)) {
      imports++;
      const rt = rankOf(to);
      const same = folderOf(from) !== "" && folderOf(from) === folderOf(to);
      const base = to.slice(to.lastIndexOf("/") + 1);
      if (!same && base.startsWith("_") && !(folderOf(to) === "tests")) {
        violations.push({ kind: "private", from, to });
      }
      if (same || rt === undefined) continue;
      if (isTest && folderOf(to) === "tests") continue;
      if (rt > rf) violations.push({ kind: "upward", from, to });
      else if (rt === rf && folderOf(from) !== folderOf(to) && folderOf(from) !== "") {
        violations.push({ kind: "sibling", from, to });
      }
    }
  }
  violations.push(...cyclesOf(graph));
  return { modules: graph.size, imports, violations };
}

/** Each loop of modules once (Tarjan's strongly connected components of more than one module). */
function cyclesOf(graph: Map<string, string[]>): LayerViolation[] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: LayerViolation[] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) {
        found.push({ kind: "cycle", from: component.sort().join(" → "), to: "" });
      }
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}

/** One line per violation, as the command prints it. */
export function formatViolation(v: LayerViolation): string {
  switch (v.kind) {
    case "cycle":
      return `cycle: ${v.from}`;
    case "unplaced":
      return `unplaced: ${v.from} is in no layer (add its folder to LAYERS in tools/layers.ts)`;
    case "private":
      return `private: ${v.from} imports ${v.to}, private to its folder`;
    case "sibling":
      return `sibling: ${v.from} imports ${v.to} (folders of one rank may not import each other)`;
    default:
      return `upward: ${v.from} imports ${v.to}, a higher layer`;
  }
}

if (import.meta.main) {
  const root = Deno.args[0] ?? join(dirname(new URL(import.meta.url).pathname), "..");
  const report = await checkLayers(root);
  for (const v of report.violations) console.error(formatViolation(v));
  if (report.violations.length > 0) {
    console.error(`layers: ${report.violations.length} violations`);
    Deno.exit(1);
  }
  console.log(`layers: ${report.modules} modules, ${report.imports} imports, ok`);
}
