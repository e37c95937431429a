import assert from "node:assert/strict";
import { layerLine } from "./s3_sdk_cpu.ts";

const S3_SDK_CPU = new URL("./s3_sdk_cpu.ts", import.meta.url).pathname;

Deno.test("the layers line gives each layer's median and range, and what each adds to the one before", () => {
  const line = layerLine({
    fetch: [310, 300, 320],
    handler: [350, 360, 340],
    client: [345, 330, 400],
  });
  assert.equal(
    line,
    "fetch 310 (300–320)\thandler 350 (340–360) +40\tclient 345 (330–400) −5",
  );
});

Deno.test("--layers with rounds that are not a positive integer fails with one line naming them", async () => {
  for (const rounds of ["0", "two", "1.5"]) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", S3_SDK_CPU, "--layers", rounds],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const err = new TextDecoder().decode(out.stderr).trim();
    assert.equal(out.code, 2, rounds);
    assert.equal(err, `s3_sdk_cpu: --layers "${rounds}": the rounds must be a positive integer`);
    assert.equal(out.stdout.byteLength, 0);
  }
});
