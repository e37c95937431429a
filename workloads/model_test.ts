import assert from "node:assert/strict";
import {
  activationBytesPerLayer,
  layerForwardFlops,
  MODEL_NAMES,
  MODEL_PRESETS,
  modelPreset,
  parameterCount,
} from "./model.ts";

Deno.test("every preset's derived parameter count is within 5 % of its name", () => {
  assert.deepEqual(MODEL_NAMES, ["7b", "13b", "40b", "52b", "70b", "100b", "175b", "280b"]);
  for (const m of MODEL_PRESETS) {
    const n = parameterCount(m);
    assert.ok(Math.abs(n / m.nominal - 1) < 0.05, `${m.name}: ${n}`);
    assert.equal(m.hidden % m.heads, 0, `${m.name}: hidden not divisible by heads`);
  }
});

Deno.test("parameterCount() is 12·L·h² + 13·L·h + (V + s + 2)·h", () => {
  const m = { name: "t", nominal: 0, layers: 2, hidden: 8, heads: 2, sequence: 4, vocabulary: 10 };
  assert.equal(parameterCount(m), 2 * (12 * 64 + 13 * 8) + (10 + 4 + 2) * 8);
  // GPT-3 175B: 96 layers of 12288
  assert.equal(Math.round(parameterCount(modelPreset("175b")) / 1e9), 175);
});

Deno.test("modelPreset() accepts 70B and 70b and names the presets otherwise", () => {
  assert.equal(modelPreset("70B").layers, 88);
  assert.throws(() => modelPreset("71b"), /use one of 7b, 13b/);
});

Deno.test("activationBytesPerLayer() is s·b·h·(34 + 5·a·s/h) over tp", () => {
  const m = modelPreset("7b"); // s 2048, h 4096, a 32
  const want = 2048 * 1 * 4096 * (34 + (5 * 32 * 2048) / 4096);
  assert.equal(activationBytesPerLayer(m, 1, 1), want);
  assert.equal(activationBytesPerLayer(m, 2, 2), want);
});

Deno.test("layerForwardFlops() is 24·b·s·h² + 4·b·s²·h over tp", () => {
  const m = modelPreset("7b");
  assert.equal(layerForwardFlops(m, 1, 1), 24 * 2048 * 4096 ** 2 + 4 * 2048 ** 2 * 4096);
  assert.equal(layerForwardFlops(m, 1, 4), layerForwardFlops(m, 1, 1) / 4);
});
