import assert from "node:assert/strict";
import { join } from "node:path";
import { toolJson } from "../../tests/_helpers.ts";

const S3_CEILING = new URL("./s3_ceiling.ts", import.meta.url).pathname;

Deno.test("bench:s3 measures raw HTTP, the SDK with each handler and the s3 tier on the stub, each row with its ratio to raw in bandwidth and CPU per request (no speed asserted)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tierbench-s3-ceiling-test-" });
  try {
    const output = join(dir, "s3.json");
    const env = { TIERBENCH_S3_ENDPOINT: "" };
    const { text, doc } = await toolJson(S3_CEILING, ["--quick", "--rounds", "1"], output, env);
    assert.equal(doc.schema, "tierbench/s3-ceiling@2");
    assert.deepEqual(
      doc.stub.map((r: { op: string; size_bytes: number; depth: number }) =>
        `${r.op} ${r.size_bytes}×${r.depth}`
      ),
      [
        "GET 1048576×8",
        "GET 8388608×8",
        "GET 65536×32",
        "PUT 1048576×8",
        "PUT 8388608×8",
        "PUT 65536×32",
      ],
    );
    for (const r of doc.stub) {
      for (const m of ["http", "sdk", "sdk-fetch", "tier"]) {
        assert.ok(r.bw_median[m] > 0, `${r.op} ${r.size_bytes}: ${m}`);
        assert.ok(r.ratio_to_raw[m] > 0, `${r.op} ${r.size_bytes}: ${m} / raw`);
        assert.ok(r.cpu_median_ns[m] > 0, `${r.op} ${r.size_bytes}: ${m} CPU per request`);
        assert.ok(r.cpu_ratio_to_raw[m] > 0, `${r.op} ${r.size_bytes}: ${m} CPU / raw`);
      }
      assert.equal(r.ratio_to_raw.http, 1);
      assert.equal(r.cpu_ratio_to_raw.http, 1);
    }
    assert.equal(doc.rgw, undefined, "no S3 server named: the stub only");
    assert.match(text, /s3 tier \/ raw/);
    assert.match(text, /s3 tier CPU µs\/req/);
    assert.match(text, /round 1\/1: s3 tier/, "a progress line names the row, round and measurer");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
