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

Deno.test("deno.json's tasks that run tierbench, and every task that starts main.ts, pass exactly the benchmark tools' V8 flags", () => {
  const url = new URL("../../deno.json", import.meta.url);
  const tasks = JSON.parse(Deno.readTextFileSync(url)).tasks as Record<string, string>;
  const starting = Object.keys(tasks).filter((name) =>
    tasks[name]!.split(/\s+/).includes("main.ts")
  );
  // the ones users run: a new task starting main.ts joins them here
  for (const name of ["tierbench", "bench", "compile"]) assert.ok(starting.includes(name), name);
  for (const name of new Set(["bench:ffi-floor", ...starting])) {
    const flags = tasks[name]!.split(/\s+/).filter((arg) => arg.startsWith("--v8-flags"));
    assert.deepEqual(flags, [TIERBENCH_V8_FLAGS], `deno task ${name}: ${tasks[name]}`);
  }
});
