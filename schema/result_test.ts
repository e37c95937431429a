import assert from "node:assert/strict";
import { stringifyResult } from "./result.ts";

Deno.test("stringifyResult() reads back as JSON.stringify's output does", () => {
  const doc = {
    a: 1,
    s: "x]\n[y",
    none: undefined,
    nested: { list: [1, "two", null, true], empty: [], obj: {} },
    rows: [[0, "stream", 1.5], [1, "other", 2]],
    mixed: [{ k: [1, 2] }, 3, [4]],
    date: new Date(0),
  };
  const text = stringifyResult(doc);
  assert.deepEqual(JSON.parse(text), JSON.parse(JSON.stringify(doc)));
});

Deno.test("stringifyResult() puts flat arrays on one line and rows of a table on a line each", () => {
  const text = stringifyResult({ t: [1, 2, 3], spans: [[0, "a"], [1, "b"]] });
  assert.equal(
    text,
    '{\n  "t": [1,2,3],\n  "spans": [\n    [0,"a"],\n    [1,"b"]\n  ]\n}',
  );
});
