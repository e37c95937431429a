import assert from "node:assert/strict";
import { join } from "node:path";
import { scratchLeft, withShmDir } from "../tests/_helpers.ts";
import { launchRanks as launch } from "../tests/_launch.ts";

type Obj = Record<string, unknown>;

const host = Deno.hostname();

Deno.test("run JOB.fio --output-format json+ --output - across 2 torchrun-style processes: the root prints fio's client/server document, each process's jobs and All clients", async () => {
  await withShmDir(async (dir) => {
    const file = join(dir, "jobs.fio");
    await Deno.writeTextFile(
      file,
      `[global]\ndirectory=${dir}\nsize=1m\nbs=64k\nioengine=psync\n\n` +
        `[w]\nrw=write\n\n[r]\nstonewall\nrw=read\n`,
    );
    const ranks = launch(2, ["run", file, "--output-format", "json+", "--output", "-", "--quiet"]);
    const [root, other] = await ranks.done();
    assert.equal(root!.code, 0, root!.stderr);
    assert.equal(other!.code, 0, other!.stderr);
    assert.equal(other!.stdout, "");
    const doc = JSON.parse(root!.stdout) as Obj; // the root's stdout is the document alone
    assert.equal(doc.jobs, undefined);
    assert.equal((doc["global options"] as Obj).directory, dir);
    const stats = doc.client_stats as Obj[];
    assert.deepEqual(
      stats.map((s) => [s.jobname, s.groupid, s.hostname, s.port]),
      [
        ["w", 0, `${host}#0`, 0],
        ["w", 0, `${host}#1`, 0],
        ["All clients", 0, "", 0],
        ["r", 1, `${host}#0`, 0],
        ["r", 1, `${host}#1`, 0],
        ["All clients", 1, "", 0],
      ],
    );
    for (const [i, dir] of [[0, "write"], [3, "read"]] as const) {
      const mine = stats.slice(i, i + 2).map((s) => s[dir] as Obj);
      const all = stats[i + 2]![dir] as Obj;
      // size-based: each process moves its 1 MiB, and the sum is every client's
      for (const m of mine) assert.equal(m.io_bytes, 1024 * 1024);
      assert.equal(all.io_bytes, 2 * 1024 * 1024);
      assert.equal(all.total_ios, 32);
      const bins = (all.clat_ns as Obj).bins as Record<string, number>;
      assert.equal(Object.values(bins).reduce((a, b) => a + b, 0), 32);
      assert.equal((stats[i]!["job options"] as Obj).rw, dir);
    }
    assert.deepEqual(await scratchLeft(dir), []);
  });
});

Deno.test("run JOB.fio across processes: jobs that would run at once are refused by every process, exit 2, naming stonewall", async () => {
  await withShmDir(async (dir) => {
    const file = join(dir, "jobs.fio");
    await Deno.writeTextFile(
      file,
      `[global]\ndirectory=${dir}\nsize=1m\n\n[a]\nrw=read\n\n[b]\nrw=read\n`,
    );
    const results = await launch(2, ["run", file, "--quiet"]).done();
    for (const r of results) {
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /jobs.fio:8 \[b\]: stonewall: across processes each job runs alone/);
    }
  });
});

Deno.test("run JOB.fio --trigger-timeout across processes is refused by every process, exit 2", async () => {
  await withShmDir(async (dir) => {
    const file = join(dir, "jobs.fio");
    await Deno.writeTextFile(file, `[a]\ndirectory=${dir}\nsize=1m\nrw=read\n`);
    const results = await launch(2, ["run", file, "--trigger-timeout", "5", "--quiet"]).done();
    for (const r of results) {
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /trigger-timeout: applies to one process/);
    }
    assert.deepEqual((await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name), ["jobs.fio"]);
  });
});
