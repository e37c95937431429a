import assert from "node:assert/strict";
import { parseModelTensors } from "./model_tensors.ts";

Deno.test("a --model-tensors file lists the parameters in order, numel the product of the shape", () => {
  const m = parseModelTensors({
    model: "two",
    dtype: "torch.float16",
    parameters: [
      { name: "emb.weight", shape: [50257, 768], numel: 50257 * 768 },
      { name: "ln.bias", shape: [768] },
      { name: "scale", shape: [] },
    ],
  }, "m.json");
  assert.equal(m.label, "two");
  assert.equal(m.elementBytes, 2);
  assert.deepEqual(m.tensors, [
    { name: "emb.weight", numel: 50257 * 768 },
    { name: "ln.bias", numel: 768 },
    { name: "scale", numel: 1 },
  ]);
  assert.equal(
    parseModelTensors({ parameters: [{ name: "w", shape: [2] }] }, "/a/b.json").label,
    "b.json",
  );
});

Deno.test("a bad --model-tensors file is refused naming the file and the field", () => {
  const cases: [unknown, RegExp][] = [
    [{}, /m\.json: parameters: .*is missing/],
    [{ parameters: [] }, /m\.json: parameters: /],
    [
      { parameters: [{ name: "w", shape: [2, 3], numel: 5 }] },
      /parameters\[0\]\.numel: 5 is not the product of the shape \(6\)/,
    ],
    [{ parameters: [{ name: "w", shape: [0, 3] }] }, /parameters\[0\]\.shape: has no elements/],
    [
      { parameters: [{ name: "w", shape: [2] }, { name: "w", shape: [2] }] },
      /parameters\[1\]\.name: "w" is listed twice/,
    ],
    [{ dtype: "int8", parameters: [{ name: "w", shape: [2] }] }, /dtype: "int8" is not one of/],
  ];
  for (const [json, want] of cases) {
    assert.throws(() => parseModelTensors(json, "m.json"), (e: Error) => {
      assert.match(e.message, /^--model-tensors: m\.json: /);
      assert.match(e.message, want);
      return true;
    });
  }
});
