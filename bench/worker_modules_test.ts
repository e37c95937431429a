import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

/**
 * The modules a Worker loads before its first message: its entry's static
 * imports, followed through the graph (`deno info --json`), leaving out
 * dynamic imports and imports of types only. Every job and rank Worker
 * loads and compiles these in an isolate of its own, so what is here is
 * paid once per job or rank.
 */
async function staticGraph(entry: string): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", fileURLToPath(new URL(entry, import.meta.url))],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    roots: string[];
    modules: {
      specifier: string;
      dependencies?: { isDynamic?: boolean; code?: { specifier?: string } }[];
    }[];
  };
  const bySpecifier = new Map(info.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>(info.roots);
  const queue = [...info.roots];
  for (let s = queue.shift(); s !== undefined; s = queue.shift()) {
    for (const dep of bySpecifier.get(s)?.dependencies ?? []) {
      const next = dep.code?.specifier;
      if (dep.isDynamic || next === undefined || seen.has(next)) continue;
      seen.add(next);
      queue.push(next);
    }
  }
  return [...seen];
}

for (const entry of ["./_job_worker.ts", "./_rank_worker.ts"]) {
  Deno.test(`${entry.slice(2)} loads no S3 client at start: only a job or rank on S3 loads it`, async () => {
    const graph = await staticGraph(entry);
    // the graph was followed (the engines' shared code is in it), and holds no S3 module
    assert.ok(graph.some((s) => s.endsWith("/engines/types.ts")), graph.join("\n"));
    const s3 = graph.filter((s) => /@aws-sdk|@smithy|\/s3[_.]|_s3_/.test(s));
    assert.deepEqual(s3, [], `loaded by every Worker:\n${s3.join("\n")}`);
  });
}

for (const entry of ["./_job_worker.ts", "./_rank_worker.ts", "./_trace_worker.ts"]) {
  Deno.test(`${entry.slice(2)} loads no HDR library at start: the main thread makes the histograms`, async () => {
    // hdr-histogram-js is CommonJS: an isolate that loads it starts Deno's Node compatibility
    // layer (about 45 ms of CPU and 7 MiB a Worker); a Worker sends HDR's counts instead
    const graph = await staticGraph(entry);
    assert.ok(graph.some((s) => s.endsWith("/core/latency_buckets.ts")), graph.join("\n"));
    const hdr = graph.filter((s) => /hdr-histogram|\/core\/recorder\.ts$/.test(s));
    assert.deepEqual(hdr, [], `loaded by every Worker:\n${hdr.join("\n")}`);
  });
}

Deno.test("_job_worker.ts loads no node: module at start: only a job that verifies or lays out a job file's files does", async () => {
  // importing any node: module starts Deno's Node compatibility layer in the isolate: about
  // 37 ms of CPU and 4.6 MiB a Worker (zlib's crc32 for --verify, statfs for a job file)
  const graph = await staticGraph("./_job_worker.ts");
  assert.ok(graph.some((s) => s.endsWith("/core/verify.ts")), graph.join("\n"));
  const node = graph.filter((s) => s.startsWith("node:") || s.startsWith("npm:"));
  assert.deepEqual(node, [], `loaded by every job Worker:\n${node.join("\n")}`);
});
