import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { Sha256 } from "./_s3_sha256.ts";

type Data = string | Uint8Array | ArrayBuffer;

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

async function ours(secret: Data | undefined, data: readonly Data[]): Promise<string> {
  const h = new Sha256(secret);
  for (const d of data) h.update(d);
  return hex(await h.digest());
}

function nodes(secret: Data | undefined, data: readonly Data[]): string {
  const asNode = (d: Data) => typeof d === "string" ? d : new Uint8Array(d as ArrayBuffer);
  const h = secret === undefined ? createHash("sha256") : createHmac("sha256", asNode(secret));
  for (const d of data) h.update(asNode(d));
  return h.digest("hex");
}

const bytes = (n: number, seed: number) =>
  Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 255);

Deno.test("Sha256 gives createHash's and createHmac's bytes for every kind of key and data", async () => {
  const data: Data[][] = [
    [],
    ["abc"],
    ["AWS4-HMAC-SHA256\n20261127T000000Z\n", "20261127/us-east-1/s3/aws4_request\n"],
    ["é ü ✓"],
    [bytes(1000, 3)],
    [bytes(64, 1).buffer as ArrayBuffer, bytes(7, 2)],
    [bytes(200, 5).subarray(50, 150)],
  ];
  const secrets: (Data | undefined)[] = [
    undefined,
    "AWS4secret",
    new Uint8Array(0),
    bytes(32, 9),
    bytes(64, 4), // one block: padded, not hashed first
    bytes(65, 4), // longer than a block: hashed first
    bytes(100, 6).subarray(10, 42),
    bytes(16, 8).buffer as ArrayBuffer,
  ];
  for (const secret of secrets) {
    for (const d of data) assert.equal(await ours(secret, d), nodes(secret, d));
  }
});

Deno.test("Sha256 HMACs with keys that alternate, or change in place, each use their own key", async () => {
  const a = bytes(32, 1);
  const b = bytes(32, 2);
  for (const key of [a, b, a, a, b]) assert.equal(await ours(key, ["x"]), nodes(key, ["x"]));
  const reused = bytes(32, 3);
  assert.equal(await ours(reused, ["y"]), nodes(reused, ["y"]));
  reused[0] = reused[0]! ^ 1;
  assert.equal(await ours(reused, ["y"]), nodes(reused, ["y"]));
});

Deno.test("Sha256 ends at its digest: the same bytes again, an update throws, reset starts over", async () => {
  const h = new Sha256(bytes(32, 7));
  h.update("first");
  const first = hex(await h.digest());
  assert.equal(hex(await h.digest()), first);
  assert.throws(() => h.update("more"), /already finished/);
  h.reset();
  h.update("second");
  assert.equal(hex(await h.digest()), nodes(bytes(32, 7), ["second"]));
});
