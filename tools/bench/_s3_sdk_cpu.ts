/**
 * CPU per request of the s3 tier's client alone, on the stub (its own
 * process): loops of PutObject and GetObject through `newS3Client` at a
 * depth, for each size, with the process's CPU time over the requests made.
 * `deno run -A tools/bench/_s3_sdk_cpu.ts [seconds]`; add `--cpu-prof` to
 * see where it goes. The middleware the client keeps is listed first.
 *
 * @module
 */

import process from "node:process";
import { newS3Client } from "../../tiers/s3_client.ts";
import { drainBody, getObject, putObject } from "../../engines/_s3_requests.ts";
import { startStubProcess } from "../services/s3_stub.ts";

const SHAPES = [
  { op: "GET", size: 1 << 20, depth: 8 },
  { op: "GET", size: 8 << 20, depth: 8 },
  { op: "GET", size: 64 << 10, depth: 32 },
  { op: "PUT", size: 1 << 20, depth: 8 },
  { op: "PUT", size: 8 << 20, depth: 8 },
  { op: "PUT", size: 64 << 10, depth: 32 },
] as const;

const seconds = Number(Deno.args[0] ?? "2");
const only = Deno.args[1];
if (!Deno.env.get("AWS_ACCESS_KEY_ID")) {
  Deno.env.set("AWS_ACCESS_KEY_ID", "TIERBENCHSTUBKEY");
  Deno.env.set("AWS_SECRET_ACCESS_KEY", "tierbench-stub-secret");
}
const stub = await startStubProcess();
const client = newS3Client({ endpoint: stub.endpoint, region: "us-east-1" });
console.log(client.middlewareStack.identify().join("\n"));
const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
try {
  for (const s of SHAPES) {
    const label = `${s.op} ${s.size >= 1 << 20 ? `${s.size >> 20} MiB` : `${s.size >> 10} KiB`}`;
    if (only !== undefined && !label.startsWith(only)) continue;
    const body = new Uint8Array(s.size).fill(7);
    const into = new Uint8Array(s.size);
    const one = async (i: number) => {
      const key = `cpu/${s.size}/${i}`;
      if (s.op === "PUT") await putObject(client, "bench", key, body);
      else await drainBody(await getObject(client, "bench", key), into);
    };
    await Promise.all(Array.from({ length: s.depth }, (_, i) => putObject(client, "bench", `cpu/${s.size}/${i}`, body)));
    const run = async (ms: number) => {
      let n = 0;
      const end = performance.now() + ms;
      await Promise.all(Array.from({ length: s.depth }, async (_, i) => {
        while (performance.now() < end) {
          await one(i);
          n++;
        }
      }));
      return n;
    };
    await run(300);
    const c0 = cpu();
    const t0 = performance.now();
    const n = await run(seconds * 1000);
    const us = (cpu() - c0) / n;
    const mbs = (n * s.size) / ((performance.now() - t0) * 1000);
    console.log(`${label} ×${s.depth}\t${us.toFixed(0)} µs CPU/req\t${mbs.toFixed(0)} MB/s\t${n} req`);
  }
} finally {
  client.destroy();
  await stub.stop();
}
