import assert from "node:assert/strict";
import { join } from "node:path";
import {
  type Clone,
  compareClones,
  findClones,
  formatClone,
  isTestPath,
  pairsOf,
  shrinkKnown,
} from "./duplicates.ts";

function clone(a: string, b: string, start = 1): Clone {
  return {
    lines: 6,
    first: { file: a, start, end: start + 5 },
    second: { file: b, start: start + 10, end: start + 15 },
  };
}

Deno.test("a clone outside tests is new unless the known list allows its pair that many times", () => {
  const clones = [clone("a.ts", "b.ts"), clone("b.ts", "a.ts", 40), clone("c.ts", "c.ts")];
  const report = compareClones(clones, [{ files: ["b.ts", "a.ts"], clones: 1 }]);
  assert.deepEqual(report.outside.length, 3);
  assert.deepEqual(report.fresh, [clones[1], clones[2]]);
  assert.deepEqual(report.stale, []);
});

Deno.test("a clone between two tests is counted in all but never new", () => {
  const clones = [clone("x_test.ts", "tests/_helpers.ts"), clone("x_test.ts", "x.ts")];
  const report = compareClones(clones, []);
  assert.deepEqual(report.total, 2);
  assert.deepEqual(report.fresh, [clones[1]]);
});

Deno.test("a known pair that shares fewer clones than listed is reported stale", () => {
  const known = { files: ["a.ts", "b.ts"] as [string, string], clones: 2 };
  assert.deepEqual(compareClones([clone("a.ts", "b.ts")], [known]).stale, [known]);
});

Deno.test("tests and test data are told from code", () => {
  assert.deepEqual(
    ["core/x_test.ts", "tests/_remote.ts", "tools/testdata/a.ts", "core/x.ts"].map(isTestPath),
    [true, true, true, false],
  );
  assert.deepEqual(formatClone(clone("a.ts", "b.ts")), "6 lines: a.ts:1-6\n    ~ b.ts:11-16");
});

Deno.test("jscpd finds a clone planted in a tree, at both its places", async () => {
  const root = await Deno.makeTempDir({ prefix: "tierbench-dup-test-" });
  try {
    const config = JSON.parse(await Deno.readTextFile(join(import.meta.dirname!, "../deno.json")));
    await Deno.writeTextFile(
      join(root, "deno.json"),
      JSON.stringify({ imports: { jscpd: config.imports.jscpd } }),
    );
    const body = Array.from({ length: 8 }, (_, i) => `  total += values[${i}] * ${i + 3};`);
    const fn = (name: string) =>
      `export function ${name}(values: number[]): number {\n  let total = 0;\n` +
      `${body.join("\n")}\n  return total;\n}\n`;
    await Deno.writeTextFile(join(root, "one.ts"), fn("one"));
    await Deno.writeTextFile(join(root, "two.ts"), `// another\n${fn("two")}`);
    const clones = await findClones(root);
    assert.deepEqual(clones.length, 1);
    assert.deepEqual([clones[0]!.first.file, clones[0]!.second.file].sort(), ["one.ts", "two.ts"]);
    assert.deepEqual(compareClones(clones, []).fresh.length, 1);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("--shrink lowers a known pair to what is left and drops a pair that is gone", () => {
  const report = compareClones([clone("a.ts", "b.ts")], [
    { files: ["a.ts", "b.ts"], clones: 2 },
    { files: ["c.ts", "d.ts"], clones: 1 },
  ]);
  assert.deepEqual(shrinkKnown(report.stale, pairsOf(report.outside)), [
    { files: ["a.ts", "b.ts"], clones: 1 },
  ]);
});
