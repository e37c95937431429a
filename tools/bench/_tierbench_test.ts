import assert from "node:assert/strict";
import { TIERBENCH_V8_FLAGS } from "./_tierbench.ts";

/**
 * A loop entered once and run long, as an engine's I/O loop is in a job's
 * measured window: it prints how many iterations it ran before its own frame
 * was TurboFan code, or "never". V8's Maglev OSR code, with compilation on
 * the running thread, never tiered up to TurboFan: the loop stayed in it.
 */
const LOOP = `
function loop() {
  let x = 1;
  for (let i = 0; i < 2e7; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    if (%CurrentFrameIsTurbofan()) return "turbofan";
  }
  return "never " + x;
}
console.log(loop());
`;

Deno.test("tierbench's V8 flags: a long loop entered once runs as TurboFan code", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "tierbench_flags_" });
  try {
    const script = `${dir}/loop.js`;
    Deno.writeTextFileSync(script, LOOP);
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-q", `${TIERBENCH_V8_FLAGS},--allow-natives-syntax`, script],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, text);
    assert.equal(text.trim(), "turbofan");
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("deno.json's tasks that run tierbench pass the benchmark tools' V8 flags", () => {
  const url = new URL("../../deno.json", import.meta.url);
  const tasks = JSON.parse(Deno.readTextFileSync(url)).tasks as Record<string, string>;
  for (const name of ["tierbench", "bench", "bench:ffi-floor", "compile"]) {
    assert.ok(tasks[name]!.includes(` ${TIERBENCH_V8_FLAGS} `), `${name}: ${tasks[name]}`);
  }
});
