import assert from "node:assert/strict";
import { blockCounts, requestsPerIo } from "./_loop_device.ts";

Deno.test("requestsPerIo() is the requests a device completed per I/O of bs bytes between two counts", () => {
  const before = { requests: 100, sectors: 2048 };
  // 8 I/Os of 1 MiB, two of them split in two: 10 requests.
  assert.equal(requestsPerIo(before, { requests: 110, sectors: 2048 + 8 * 2048 }, 1 << 20), 1.25);
  // 4 KiB reads, one request each.
  assert.equal(requestsPerIo(before, { requests: 132, sectors: 2048 + 32 * 8 }, 4096), 1);
  assert.equal(requestsPerIo(before, before, 4096), undefined);
});

Deno.test("blockCounts() reads a block device's requests and sectors, by name or /dev path; undefined for none", () => {
  const name = [...Deno.readDirSync("/sys/block")].map((e) => e.name).sort()[0];
  assert.ok(name !== undefined, "no block device in /sys/block");
  const counts = blockCounts(name);
  assert.ok(counts !== undefined && counts.requests >= 0 && counts.sectors >= 0, name);
  assert.ok(blockCounts(`/dev/${name}`) !== undefined);
  assert.equal(blockCounts("no-such-device"), undefined);
});
