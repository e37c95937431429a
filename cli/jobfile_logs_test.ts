/**
 * A job file's logs (write_bw_log, write_iops_log, write_lat_log) as fio
 * writes them — names, columns, entries — drawn by fio's own plotting tools;
 * and fio's JSON beside tierbench's in `compare`.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { needing } from "../tests/_requirements.ts";
import { fio } from "../tests/_fio.ts";
import { runCli, sh, withTempDir } from "../tests/_helpers.ts";

/** The `.log` files of a directory, with their lines split into numbers. */
async function logs(dir: string): Promise<Map<string, number[][]>> {
  const out = new Map<string, number[][]>();
  for await (const e of Deno.readDir(dir)) {
    if (!e.name.endsWith(".log")) continue;
    const text = await Deno.readTextFile(join(dir, e.name));
    out.set(e.name, text.split("\n").filter((l) => l !== "").map((l) => l.split(", ").map(Number)));
  }
  return out;
}

async function both(dir: string, job: string) {
  const f = join(dir, "fio"), t = join(dir, "tb");
  await Deno.mkdir(f);
  await Deno.mkdir(t);
  await Deno.writeTextFile(join(f, "j.fio"), job);
  await Deno.writeTextFile(join(t, "j.fio"), job);
  await Deno.writeTextFile(join(f, "fio.json"), await fio(["--output-format=json", "j.fio"], f));
  const r = await runCli(["run", "j.fio", "--quiet", "--output", "tb.json"], { cwd: t });
  assert.equal(r.code, 0, r.stderr);
  return { f, t };
}

Deno.test(
  needing(["fio"], {
    name: "per-I/O logs are fio's: the same files, an entry per I/O with fio's columns, and " +
      "with log_offset the same offsets",
    async fn() {
      await withTempDir(async (dir) => {
        const job = "[global]\nioengine=psync\nsize=1m\nbs=16k\nfilename=data\n[j]\n" +
          "rw=randread\nwrite_bw_log\nwrite_iops_log=io\nwrite_lat_log=lt\nlog_offset=1\n";
        const { f, t } = await both(dir, job);
        const theirs = await logs(f), ours = await logs(t);
        assert.deepEqual([...ours.keys()].sort(), [...theirs.keys()].sort());
        for (const [name, lines] of theirs) {
          const mine = ours.get(name)!;
          assert.equal(mine.length, lines.length, name);
          for (const l of mine) {
            assert.equal(l.length, 6, `${name}: time, value, ddir, bs, offset, prio`);
          }
          const cols = (ls: number[][], i: number) => ls.map((l) => l[i]!).sort((a, b) => a - b);
          for (const col of [2, 3, 4, 5]) {
            assert.deepEqual(cols(mine, col), cols(lines, col), `${name} column ${col}`);
          }
          const times = mine.map((l) => l[0]!);
          assert.deepEqual(times, [...times].sort((a, b) => a - b), `${name}: times in order`);
        }
        // iops entries are 1 per I/O; bw entries bytes×10^6/clat ns, as fio computes them
        for (const l of ours.get("io_iops.1.log")!) assert.equal(l[1], 1);
        const clat = ours.get("lt_clat.1.log")!, bw = ours.get("j_bw.1.log")!;
        for (const [i, l] of bw.entries()) {
          assert.equal(l[1], Math.floor((16384 * 1e6) / clat[i]![1]!));
        }
      });
    },
  }),
);

Deno.test(
  needing(["fio", "gnuplot"], {
    name: "fio2gnuplot and fio_generate_plots draw the averaged logs tierbench writes",
    async fn() {
      await withTempDir(async (dir) => {
        const job = "[global]\nioengine=psync\nsize=16m\nbs=4k\nfilename=data\ntime_based\n" +
          "runtime=2\n[j]\nrw=randread\nwrite_bw_log\nwrite_iops_log\nwrite_lat_log\n" +
          "log_avg_msec=100\n";
        await Deno.writeTextFile(join(dir, "j.fio"), job);
        const r = await runCli(["run", "j.fio", "--quiet", "--output", "tb.json"], { cwd: dir });
        assert.equal(r.code, 0, r.stderr);
        const bw = (await logs(dir)).get("j_bw.1.log")!;
        assert.ok(bw.length >= 15 && bw.length <= 22, `${bw.length} entries of 100 ms in 2 s`);
        for (const l of bw) assert.deepEqual([l.length, l[2], l[3]], [5, 0, 4096]);
        const plots = join(dir, "plots");
        const g = await sh("sh", ["-c", `cd ${dir} && fio2gnuplot -b -g -d ${plots}`]);
        assert.equal(g.code, 0, g.out);
        const pngs = [...Deno.readDirSync(plots)].filter((e) => e.name.endsWith(".png"));
        assert.ok(pngs.some((e) => e.name.startsWith("j_bw.1")), g.out);
        for (const p of pngs) assert.ok(Deno.statSync(join(plots, p.name)).size > 1000, p.name);
        const s = await sh("sh", ["-c", `cd ${dir} && fio_generate_plots tb`]);
        assert.equal(s.code, 0, s.out);
        for (const kind of ["bw", "iops", "lat", "clat"]) {
          assert.ok(Deno.statSync(join(dir, `tb-${kind}.svg`)).size > 1000, kind);
        }
      });
    },
  }),
);

Deno.test(
  needing(["fio"], {
    name: "compare fio.json tierbench.json: fio's JSON (json and json+) beside tierbench's, " +
      "matched by pattern",
    async fn() {
      await withTempDir(async (dir) => {
        const job = "[global]\nioengine=psync\nsize=4m\nbs=4k\nfilename=data\n[r]\nrw=randread\n";
        const { f, t } = await both(dir, job);
        const plus = join(f, "plus.json");
        await Deno.writeTextFile(plus, await fio(["--output-format=json+", "j.fio"], f));
        for (const fioJson of [join(f, "fio.json"), plus]) {
          const r = await runCli(["compare", fioJson, join(t, "tb.json")]);
          assert.equal(r.code, 0, r.stderr);
          assert.match(r.stdout, /file randread 4k, 1 proc × 1 deep +│ read │ bandwidth/);
          assert.match(r.stdout, /file randread 4k, 1 proc × 1 deep +│ read │ lat p99 +│ \d/);
        }
        // and tierbench's own fio-json, read back
        const tbFio = join(t, "tb-fio.json");
        const again = await runCli([
          "run",
          "j.fio",
          "--quiet",
          "--output-format",
          "json+",
          "--output",
          tbFio,
        ], { cwd: t });
        assert.equal(again.code, 0, again.stderr);
        const r = await runCli(["compare", join(f, "fio.json"), tbFio]);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, /file randread 4k, 1 proc × 1 deep +│ read │ bandwidth/);
        const out = join(dir, "report");
        const rep = await runCli(["report", plus, "--output", out]);
        assert.equal(rep.code, 0, rep.stderr);
        const md = await Deno.readTextFile(join(out, "report.md"));
        assert.match(md, /randread/);
      });
    },
  }),
);
