import assert from "node:assert/strict";
import { joinGroup } from "./group.ts";
import { detectLaunch } from "./launch.ts";
import { spawnTorchrun, tcpPair } from "./testdata/_run_probe.ts";

const host = Deno.hostname();

Deno.test("a group of one resolves every step at once with its own bytes", async () => {
  await using g = await joinGroup(detectLaunch({}), { version: "1", timeoutMs: 1000 });
  assert.deepEqual([g.rank, g.size, g.root, g.members.length], [0, 1, 0, 1]);
  await g.barrier("only", 1000);
  assert.deepEqual(await g.gather(new Uint8Array([7]), 1000), [new Uint8Array([7])]);
  assert.deepEqual(await g.broadcast(new Uint8Array([8]), 1000), new Uint8Array([8]));
});

Deno.test("tcp: two ranks in one process form a group, and nothing listens after dispose", async () => {
  const { member: a, hub: b, port } = await tcpPair();
  await Promise.all([a.barrier("x", 10_000), b.barrier("x", 10_000)]);
  const [ga, gb] = await Promise.all([
    a.gather(new Uint8Array([1]), 10_000),
    b.gather(new Uint8Array([0]), 10_000),
  ]);
  assert.equal(ga, undefined);
  assert.deepEqual(gb, [new Uint8Array([0]), new Uint8Array([1])]);
  await b[Symbol.asyncDispose]();
  await a[Symbol.asyncDispose]();
  Deno.listen({ hostname: "127.0.0.1", port }).close();
});

Deno.test("tcp: a member waits at a barrier without a deadline (2^31 - 1 ms) until the hub comes", async () => {
  const { member: a, hub: b } = await tcpPair();
  const forever = 2 ** 31 - 1;
  const member = a.barrier("the end of a long step", forever);
  let hubArrived = false;
  // the member is released only after the hub arrives, however long that takes
  await new Promise((r) => setTimeout(r, 300));
  hubArrived = true;
  await Promise.all([
    member.then(() => assert.ok(hubArrived)),
    b.barrier("the end of a long step", forever),
  ]);
  await b[Symbol.asyncDispose]();
  await a[Symbol.asyncDispose]();
});

Deno.test("tcp: a member that closes after its last step has left in order, not been lost", async () => {
  const { member, hub } = await tcpPair();
  // the member sends its last bytes and closes while the hub is still busy elsewhere
  assert.equal(await member.gather(new Uint8Array([1]), 10_000), undefined);
  await member[Symbol.asyncDispose]();
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(hub.lost.aborted, false);
  assert.deepEqual(await hub.gather(new Uint8Array([0]), 10_000), [
    new Uint8Array([0]),
    new Uint8Array([1]),
  ]);
  await hub[Symbol.asyncDispose]();
});

Deno.test("torchrun-style: 3 processes share barrier, gather by rank, broadcast and members", async () => {
  const probes = spawnTorchrun(3, () => ({ PROBE: "ok" }));
  const ends = await Promise.all(probes.map((p) => p.done));
  const results = probes.map((p) => p.results()[0]!);
  ends.forEach((e, rank) => assert.equal(e.code, 0, `rank ${rank}: ${e.stderr}`));
  for (const [rank, r] of results.entries()) {
    assert.equal(r.rank, rank);
    assert.equal(r.root, 0);
    assert.equal(r.broadcast, "run-42");
    assert.deepEqual(
      r.members!.map((m) => [m.rank, m.node, m.host, m.version]),
      [0, 1, 2].map((i) => [i, `${host}#${i}`, host, "1.0.0"]),
    );
  }
  assert.deepEqual(results[0]!.gathered, [0, 1, 2].map((i) => `payload of rank ${i}`));
  assert.equal(results[1]!.gathered, undefined);
  assert.deepEqual(new Set(results[0]!.members!.map((m) => m.pid)).size, 3);
});

Deno.test("torchrun-style: a member killed mid-barrier fails the hub and the others with RankLostError naming it", async () => {
  // The barrier's timeout is 90 s: a RankLostError (not a RankTimeoutError) shows the loss was seen at once.
  const probes = spawnTorchrun(3, () => ({ PROBE: "lost", PROBE_VICTIM: "2" }));
  await Promise.all(probes.map((p) => p.waitFor('"joined"')));
  probes[2]!.child.kill("SIGKILL");
  const ends = await Promise.all(probes.map((p) => p.done));
  for (const rank of [0, 1]) {
    assert.notEqual(ends[rank]!.code, 0, `rank ${rank} exits non-zero`);
    const e = probes[rank]!.results()[0]!.error!;
    assert.equal(e.name, "RankLostError", `rank ${rank}: ${e.message}`);
    assert.equal(e.rank, 2);
    assert.equal(e.node, `${host}#2`);
    assert.match(e.message, /rank 2 on .*#2 was lost during doomed/);
  }
});

Deno.test("torchrun-style: a member that never reaches the barrier is named by RankTimeoutError", async () => {
  const probes = spawnTorchrun(3, () => ({ PROBE: "late", PROBE_VICTIM: "2" }));
  const ends = await Promise.all(probes.slice(0, 2).map((p) => p.done));
  probes[2]!.child.kill("SIGKILL");
  await probes[2]!.done;
  for (const rank of [0, 1]) {
    assert.notEqual(ends[rank]!.code, 0);
    const e = probes[rank]!.results()[0]!.error!;
    assert.equal(e.name, "RankTimeoutError", `rank ${rank}: ${e.message}`);
    assert.deepEqual(e.ranks, [{ rank: 2, node: `${host}#2` }]);
    assert.match(e.message, /rank 2 on .*#2 did not reach late step within 1.5 s/);
  }
});

Deno.test("torchrun-style: members of different versions are refused on every rank, naming both", async () => {
  const probes = spawnTorchrun(3, (rank) => ({
    PROBE: "version",
    PROBE_VERSION: rank === 2 ? "2.0.0" : "1.0.0",
  }));
  const ends = await Promise.all(probes.map((p) => p.done));
  for (const rank of [0, 1, 2]) {
    assert.notEqual(ends[rank]!.code, 0);
    const e = probes[rank]!.results()[0]!.error!;
    assert.equal(e.name, "VersionMismatchError", `rank ${rank}: ${e.message}`);
    assert.match(e.message, /rank 0 on .*#0 runs 1\.0\.0/);
    assert.match(e.message, /rank 2 on .*#2 runs 2\.0\.0/);
  }
  assert.equal(probes[2]!.results()[0]!.error!.mine!.version, "2.0.0");
});
