import assert from "node:assert/strict";
import { TIERBENCH_V8_FLAGS } from "./_tierbench.ts";

/** deno.json's tasks, read as the user's `deno task` reads them. */
async function tasks(): Promise<Record<string, string>> {
  const text = await Deno.readTextFile(new URL("../../deno.json", import.meta.url));
  return JSON.parse(text).tasks;
}

Deno.test("every deno task that starts main.ts carries exactly the benchmark tools' V8 flags", async () => {
  const all = await tasks();
  const starting = Object.keys(all).filter((name) => all[name]!.split(/\s+/).includes("main.ts"));
  // the ones users run: a new task starting main.ts joins them here
  for (const name of ["tierbench", "bench", "compile"]) assert.ok(starting.includes(name), name);
  for (const name of starting) {
    const flags = all[name]!.split(/\s+/).filter((arg) => arg.startsWith("--v8-flags"));
    assert.deepEqual(flags, [TIERBENCH_V8_FLAGS], `deno task ${name}: ${all[name]}`);
  }
});
