import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { checkLayers, formatViolation, importsOf, rankOf } from "./layers.ts";

const ROOT = join(dirname(new URL(import.meta.url).pathname), "..");

/** Writes `files` (path → source) under a fresh temporary directory and returns it. */
async function tree(files: Record<string, string>): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "tierbench-layers-" });
  for (const [path, source] of Object.entries(files)) {
    await Deno.mkdir(join(dir, dirname(path)), { recursive: true });
    await Deno.writeTextFile(join(dir, path), source);
  }
  return dir;
}

async function violationsOf(files: Record<string, string>): Promise<string[]> {
  const dir = await tree(files);
  try {
    return (await checkLayers(dir)).violations.map(formatViolation);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("the repository's imports go one way: no upward, sibling or private import, no cycle", async () => {
  const report = await checkLayers(ROOT);
  assert.deepEqual(report.violations.map(formatViolation), []);
  assert.ok(report.modules > 100 && report.imports > 300, `${report.modules} modules`);
});

Deno.test("checkLayers() fails on an upward import, even a type-only one", async () => {
  const found = await violationsOf({
    "core/a.ts": 'import type { B } from "../bench/b.ts";\nexport type A = B;\n',
    "bench/b.ts": "export type B = number;\n",
  });
  assert.deepEqual(found, ["upward: core/a.ts imports bench/b.ts, a higher layer"]);
});

Deno.test("checkLayers() accepts downward imports and a test's import of tests/ helpers", async () => {
  const found = await violationsOf({
    "core/a.ts": "export const a = 1;\n",
    "bench/b.ts": 'import { a } from "../core/a.ts";\nexport const b = a;\n',
    "core/a_test.ts": 'import { h } from "../tests/_h.ts";\nh();\n',
    "tests/_h.ts": "export function h() {}\n",
  });
  assert.deepEqual(found, []);
});

Deno.test("checkLayers() names another folder's private module and a cycle", async () => {
  const found = await violationsOf({
    "core/_x.ts": "export const x = 1;\n",
    "tiers/t.ts": 'import { x } from "../core/_x.ts";\nexport const t = x;\n',
    "bench/p.ts": 'import { q } from "./q.ts";\nexport const p = q;\n',
    "bench/q.ts": 'import { p } from "./p.ts";\nexport const q = () => p;\n',
  });
  assert.deepEqual(found.sort(), [
    "cycle: bench/p.ts → bench/q.ts",
    "private: tiers/t.ts imports core/_x.ts, private to its folder",
  ]);
});

Deno.test("checkLayers() names a module in no layer", async () => {
  const found = await violationsOf({ "misc/m.ts": "export const m = 1;\n" });
  assert.equal(found.length, 1);
  assert.match(found[0]!, /^unplaced: misc\/m\.ts/);
});

Deno.test("importsOf() reads static, dynamic, re-export and Worker URL imports, not those in comments", () => {
  const source = [
    "/**",
    ' * import { doc } from "./in_doc.ts";',
    " */",
    '// import { line } from "./in_line.ts";',
    'import type { A } from "./a.ts";',
    'export { b } from "../b.ts";',
    'const c = await import("./c.ts");',
    'const w = new URL("./worker.ts", import.meta.url);',
    'import pc from "picocolors";',
  ].join("\n");
  assert.deepEqual(importsOf(source), ["./a.ts", "../b.ts", "./c.ts", "./worker.ts"]);
});

Deno.test("rankOf() puts bench above solver and a root test on top", () => {
  assert.ok(rankOf("bench/x.ts")! > rankOf("solver/x.ts")!);
  assert.ok(rankOf("core/x.ts")! < rankOf("tiers/x.ts")!);
  assert.equal(rankOf("zz_leftovers_test.ts"), rankOf("tests/x.ts"));
  assert.equal(rankOf("misc/x.ts"), undefined);
});
