import assert from "node:assert/strict";
import { compareLengths, findLongFunctions, LIMIT, longFunctions } from "./function_lengths.ts";

const body = (n: number) => Array.from({ length: n }, (_, i) => `    x += ${i};`).join("\n");

Deno.test("longFunctions names methods, assigned arrows and callbacks, and counts first to last line", () => {
  const text = [
    "class Run {",
    "  measure(): void {",
    "    let x = 0;",
    body(LIMIT),
    "  }",
    "}",
    "const drain = () => {",
    "  let x = 0;",
    body(LIMIT),
    "};",
    "export function outer(): void {",
    "  [1].forEach(() => {",
    "    let x = 0;",
    body(LIMIT),
    "  });",
    "}",
    "function short(): number {",
    "  return 1;",
    "}",
  ].join("\n");
  const found = longFunctions("a.ts", text).map((f) => `${f.name}:${f.lines}`);
  assert.deepEqual(found, [
    `Run.measure:${LIMIT + 3}`,
    `drain:${LIMIT + 3}`,
    `outer:${LIMIT + 5}`,
    `outer/callback:${LIMIT + 3}`,
  ]);
});

Deno.test("a function of exactly the limit passes; one line more is reported", () => {
  const of = (lines: number) => `function f() {\n${body(lines - 2)}\n}\n`;
  assert.deepEqual(longFunctions("a.ts", of(LIMIT)), []);
  assert.equal(longFunctions("a.ts", of(LIMIT + 1))[0]?.lines, LIMIT + 1);
});

Deno.test("compareLengths: a long function not in the list is new; a listed one now short is stale", () => {
  const found = [{ file: "a.ts", name: "big", lines: 90 }, {
    file: "b.ts",
    name: "run",
    lines: 85,
  }];
  const known = [
    { file: "b.ts", name: "run", why: "a table" },
    { file: "c.ts", name: "gone", why: "was long" },
  ];
  const { fresh, stale } = compareLengths(found, known);
  assert.deepEqual(fresh.map((f) => f.name), ["big"]);
  assert.deepEqual(stale.map((k) => k.name), ["gone"]);
});

Deno.test("the check fails on a long function planted in a checkout, naming it, and passes once it is gone", async () => {
  const root = await Deno.makeTempDir({ prefix: "tierbench-lengths-" });
  try {
    const git = (...args: string[]) => new Deno.Command("git", { args, cwd: root }).output();
    await git("init", "-q");
    await Deno.writeTextFile(
      `${root}/planted.ts`,
      `export function planted() {\n${body(LIMIT)}\n}\n`,
    );
    await Deno.writeTextFile(`${root}/planted_test.ts`, `function t() {\n${body(LIMIT)}\n}\n`);
    await git("add", ".");
    const found = await findLongFunctions(root);
    assert.deepEqual(found.map((f) => `${f.file} ${f.name}`), ["planted.ts planted"]);
    assert.equal(compareLengths(found, []).fresh.length, 1);
    await Deno.writeTextFile(`${root}/planted.ts`, "export function planted() {}\n");
    assert.deepEqual(await findLongFunctions(root), []);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
