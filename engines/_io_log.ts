/**
 * fio's bandwidth, IOPS and latency logs of one clone (`write_bw_log`,
 * `write_iops_log`, `write_lat_log`), kept as fio 3.33 keeps them (stat.c,
 * iolog.c) and written in its format, so fio2gnuplot and fio_generate_plots
 * draw them: one line per entry, `time, value, ddir, bs, prio` (`time,
 * value, ddir, bs, offset, prio` with log_offset); time in ms since the
 * measured time began, latencies in ns, bandwidth in KiB/s.
 *
 * With log_avg_msec 0 every I/O is an entry: its latency, `bytes × 10^6 /
 * clat_ns` for bandwidth, 1 for IOPS. With log_avg_msec N, the latencies'
 * entries are each window's mean (or max, log_max_value), and bandwidth and
 * IOPS each window's rate, `bs` then 0 (or the job's block size, for
 * bandwidth and IOPS, when it is fixed).
 *
 * @module
 */

import type { IoLogPlan } from "../core/job_protocol.ts";

/** One window's sum, count and max of one log's values, per direction. */
class Window {
  sum = [0, 0];
  n = [0, 0];
  max = [0, 0];
  add(d: number, v: number): void {
    this.sum[d]! += v;
    this.n[d]!++;
    if (v > this.max[d]!) this.max[d] = v;
  }
  reset(d: number): void {
    this.sum[d] = 0;
    this.n[d] = 0;
    this.max[d] = 0;
  }
}

/** A growable list of log lines' numbers: time, value, ddir, bs, offset. */
class Entries {
  #a = new Float64Array(5 * 1024);
  #n = 0;
  push(t: number, v: number, d: number, bs: number, off: number): void {
    if ((this.#n + 1) * 5 > this.#a.length) {
      const b = new Float64Array(this.#a.length * 2);
      b.set(this.#a);
      this.#a = b;
    }
    const a = this.#a, i = this.#n * 5;
    a[i] = t;
    a[i + 1] = v;
    a[i + 2] = d;
    a[i + 3] = bs;
    a[i + 4] = off;
    this.#n++;
  }
  /** fio's lines. */
  lines(withOffset: boolean): string {
    const a = this.#a;
    let out = "";
    for (let i = 0; i < this.#n * 5; i += 5) {
      out += withOffset
        ? `${a[i]}, ${a[i + 1]}, ${a[i + 2]}, ${a[i + 3]}, ${a[i + 4]}, 0\n`
        : `${a[i]}, ${a[i + 1]}, ${a[i + 2]}, ${a[i + 3]}, 0\n`;
    }
    return out;
  }
}

/** The logs of one clone. */
export class IoLog {
  readonly #p: IoLogPlan;
  #start = 0;
  readonly #lat = new Entries();
  readonly #clat = new Entries();
  readonly #slat = new Entries();
  readonly #bw = new Entries();
  readonly #iops = new Entries();
  /** Averaged: the latencies' windows and where each direction's began (ms). */
  readonly #latW = new Window();
  readonly #clatW = new Window();
  readonly #slatW = new Window();
  readonly #last = [0, 0];
  /** Averaged bandwidth and IOPS: bytes and I/Os since the window began. */
  readonly #bytes = [0, 0];
  readonly #ios = [0, 0];
  #rateStart = 0;

  constructor(plan: IoLogPlan) {
    this.#p = plan;
  }

  /** The measured time begins at `t` (monoNow). */
  start(t: number): void {
    this.#start = t;
  }

  /** One completed I/O at `now` (monoNow): latencies in ns (slat < 0: none). */
  add(now: number, isRead: boolean, latNs: number, slatNs: number, bytes: number, off: number) {
    const p = this.#p;
    const d = isRead ? 0 : 1;
    const t = Math.floor(now - this.#start);
    const clat = Math.round(slatNs >= 0 ? latNs - slatNs : latNs);
    const o = off < 0 ? 0 : off;
    if (p.avgMsec === 0) {
      if (p.lat) this.#lat.push(t, Math.round(latNs), d, bytes, o);
      if (p.clat) this.#clat.push(t, clat, d, bytes, o);
      if (p.slat && slatNs >= 0) this.#slat.push(t, Math.round(slatNs), d, bytes, o);
      if (p.bw) this.#bw.push(t, clat > 0 ? Math.floor((bytes * 1e6) / clat) : 0, d, bytes, o);
      if (p.iops) this.#iops.push(t, 1, d, bytes, o);
      return;
    }
    this.#rates(t);
    this.#bytes[d]! += bytes;
    this.#ios[d]!++;
    if (p.lat || p.clat || p.slat) {
      if (p.lat) this.#latW.add(d, latNs);
      if (p.clat) this.#clatW.add(d, clat);
      if (p.slat && slatNs >= 0) this.#slatW.add(d, slatNs);
      if (t - this.#last[d]! >= p.avgMsec) {
        this.#flushLatency(d, t);
        this.#last[d] = t - (t % p.avgMsec);
      }
    }
  }

  /** fio's window entry of each latency log for direction `d` at `t`. */
  #flushLatency(d: number, t: number): void {
    const max = this.#p.max;
    const put = (w: Window, e: Entries) => {
      if (w.n[d]! > 0) e.push(t, max ? w.max[d]! : Math.floor(w.sum[d]! / w.n[d]! + 0.5), d, 0, 0);
      w.reset(d);
    };
    if (this.#p.lat) put(this.#latW, this.#lat);
    if (this.#p.clat) put(this.#clatW, this.#clat);
    if (this.#p.slat) put(this.#slatW, this.#slat);
  }

  /** The bandwidth and IOPS entries of every window that ended by `t`. */
  #rates(t: number): void {
    const p = this.#p;
    const avg = p.avgMsec;
    while (t >= this.#rateStart + avg) {
      const end = this.#rateStart + avg;
      for (const d of [0, 1]) {
        if (this.#ios[d] === 0) continue;
        if (p.bw) {
          this.#bw.push(end, Math.floor((this.#bytes[d]! * 1000) / avg / 1024), d, p.bs[d]!, 0);
        }
        if (p.iops) this.#iops.push(end, Math.floor((this.#ios[d]! * 1000) / avg), d, p.bs[d]!, 0);
        this.#bytes[d] = 0;
        this.#ios[d] = 0;
      }
      this.#rateStart = end;
    }
  }

  /** Closes the last windows at `now` and writes the logs (each through a temporary file). */
  finish(now: number): void {
    const p = this.#p;
    const t = Math.max(0, Math.floor(now - this.#start));
    if (p.avgMsec > 0) {
      this.#rates(t);
      for (const d of [0, 1]) {
        if (this.#ios[d]! > 0) {
          const spent = Math.max(1, t - this.#rateStart);
          if (p.bw) {
            this.#bw.push(t, Math.floor((this.#bytes[d]! * 1000) / spent / 1024), d, p.bs[d]!, 0);
          }
          if (p.iops) {
            this.#iops.push(t, Math.floor((this.#ios[d]! * 1000) / spent), d, p.bs[d]!, 0);
          }
        }
        this.#flushLatency(d, t);
      }
    }
    const write = (path: string | undefined, e: Entries) => {
      if (path === undefined) return;
      const text = e.lines(p.offset && p.avgMsec === 0);
      if (p.append) {
        Deno.writeTextFileSync(path, text, { append: true });
        return;
      }
      const tmp = `${path}.tierbench-${Deno.pid}.tmp`;
      Deno.writeTextFileSync(tmp, text);
      Deno.renameSync(tmp, path);
    };
    write(p.lat, this.#lat);
    write(p.clat, this.#clat);
    write(p.slat, this.#slat);
    write(p.bw, this.#bw);
    write(p.iops, this.#iops);
  }
}
