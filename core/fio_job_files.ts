/**
 * A fio job's files as fio 3.33 sets them up (init.c add_job, filesetup.c
 * add_file, setup_files, get_start_offset): their names (`filename` with
 * `:` between files and `\:` for a colon, or `$jobname.$jobnum.$filenum`
 * from `filename_format`, under `directory`), their sizes (`size` split over
 * `nrfiles`, `filesize` or its range, or the size of an existing file), and
 * where I/O starts in each (`offset`, `offset_increment`).
 *
 * @module
 */

import { isAbsolute, join } from "node:path";
import type { PatternFile } from "./io_pattern.ts";
import type { FioFile } from "./fio_job.ts";
import type { FioSettings } from "./fio_settings.ts";
import { Taus88 } from "./fio_random.ts";
import { JobFileError } from "./jobfile.ts";

/** What the file system says of a path. */
export interface PathInfo {
  readonly kind: "file" | "directory" | "device" | "other";
  readonly size: number;
}

/** Looks a path up; undefined when it does not exist. */
export type StatFn = (path: string) => PathInfo | undefined;

/** fio's get_next_str: `:` separates names, `\:` is a colon in one, a leading `:` is skipped. */
export function splitNames(text: string): string[] {
  const out: string[] = [];
  let cur = "";
  let started = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === ":") {
      if (!started && cur === "") continue;
      if (cur.endsWith("\\")) {
        cur = cur.slice(0, -1) + ":";
        continue;
      }
      out.push(cur);
      cur = "";
      started = false;
      continue;
    }
    cur += c;
    started = true;
  }
  if (cur !== "") out.push(cur);
  return out;
}

/** fio's make_filename: filename_format with $jobname, $jobnum, $filenum (case-insensitive). */
export function makeFilename(format: string, jobname: string, jobnum: number, filenum: number) {
  if (!format) return `${jobname}.${jobnum}.${filenum}`;
  return format
    .replace(/\$jobname/gi, jobname)
    .replace(/\$jobnum/gi, String(jobnum))
    .replace(/\$filenum/gi, String(filenum))
    .replace(/\$clientuid/gi, ""); // no client/server mode: no client's address
}

/** One clone's files as fio names and sizes them. */
export interface CloneFiles {
  readonly files: FioFile[];
  readonly pattern: PatternFile[];
}

/** What sizing a job's files needs besides its settings. */
export interface FileContext {
  readonly cwd: string;
  readonly stat: StatFn;
  /** The job's section name (fio's jobname for generated names). */
  readonly jobname: string;
  /** `file:line` of the section, for messages with no key. */
  readonly where: string;
  /** No files on disk (ioengine=null): sizes come from size= alone. */
  readonly diskless: boolean;
  readonly numjobs: number;
  /** The smallest block size of the job (fio's td_min_bs). */
  readonly minBs: number;
  /** The seed of fio's file-size stream (filesize ranges). */
  readonly fileSizeSeed: bigint;
}

/** The directories `directory` names, each checked as fio's str_directory_cb checks it. */
function directories(s: FioSettings, ctx: FileContext): string[] {
  const text = s.text("directory");
  if (text === undefined) return [];
  const dirs = splitNames(text.trim());
  const e = s.where("directory")!;
  for (const d of dirs) {
    const info = ctx.stat(isAbsolute(d) ? d : join(ctx.cwd, d));
    if (!info) {
      throw new JobFileError(
        e.where,
        e.key,
        `${d} does not exist (fio: ${d} is not a directory): create it or name another`,
      );
    }
    if (info.kind !== "directory") {
      throw new JobFileError(e.where, e.key, `${d} is not a directory (fio refuses it too)`);
    }
  }
  return dirs;
}

/** The names of clone `subjob`'s files, as fio spells them. */
function names(s: FioSettings, ctx: FileContext, dirs: readonly string[], subjob: number) {
  const prefix = (index: number) => dirs.length ? `${dirs[index % dirs.length]}/` : "";
  const filename = s.text("filename");
  if (filename !== undefined) {
    // every clone shares the files (fio's dup_files), under the first directory
    return splitNames(filename.trim()).map((n) => isAbsolute(n) ? n : `${prefix(0)}${n}`);
  }
  const nr = Math.max(1, s.num("nrfiles"));
  const format = s.text("filename_format") ?? "";
  return Array.from(
    { length: nr },
    (_, i) => `${prefix(subjob)}${makeFilename(format, ctx.jobname, subjob, i)}`,
  );
}

/** fio's get_start_offset for a file of `realSize` in clone `subjob`. */
function startOffset(s: FioSettings, realSize: number, subjob: number, minBs: number): number {
  const off = s.num("offset");
  const inc = s.num("offset_increment");
  let align = false;
  let increment = inc;
  if (inc < 0) {
    increment = Math.floor((-inc * realSize) / 100);
    align = true;
  }
  let offset: number;
  if (off < 0) {
    offset = Math.floor((realSize * -off) / 100) + subjob * increment;
    align = true;
  } else offset = off + subjob * increment;
  if (align) {
    const a = s.has("offset_align") ? s.num("offset_align") : minBs;
    if (a > 0) offset = Math.ceil(offset / a) * a;
  }
  return offset;
}

/**
 * Each clone's files: paths, names and sizes, and what the I/O of each
 * addresses, as fio's setup_files works them out.
 *
 * @throws {JobFileError} where fio would fail: a directory that is not
 * there, a file of unknown size with no size=, a device.
 */
export function cloneFiles(s: FioSettings, ctx: FileContext): CloneFiles[] {
  const dirs = directories(s, ctx);
  const out: CloneFiles[] = [];
  for (let c = 0; c < ctx.numjobs; c++) {
    const subjob = c === 0 ? 0 : ctx.numjobs - c;
    out.push(oneClone(s, ctx, names(s, ctx, dirs, subjob), subjob));
  }
  return out;
}

function oneClone(s: FioSettings, ctx: FileContext, fnames: string[], subjob: number): CloneFiles {
  const real = fnames.map((name) => {
    if (ctx.diskless) return -1;
    const path = isAbsolute(name) ? name : join(ctx.cwd, name);
    const info = ctx.stat(path);
    if (!info) return 0;
    if (info.kind === "device") {
      const e = s.where("filename");
      throw new JobFileError(
        e?.where ?? ctx.where,
        e?.key ?? "filename",
        `${name} is a device: a job file runs on files only (tierbench never writes a device)`,
      );
    }
    if (info.kind !== "file") {
      const e = s.where("filename");
      throw new JobFileError(e?.where ?? ctx.where, e?.key ?? "filename", `${name} is not a file`);
    }
    return info.size;
  });
  const size = s.num("size");
  const sizePercent = size < 0 ? -size : 0;
  const totalSize = sizePercent ? 0 : size;
  const [lo, hi] = [s.num("filesize", 0), s.num("filesize", 1) || s.num("filesize", 0)];
  const known = real.reduce((a, r) => (r > 0 ? a + r : a), 0);
  if (!totalSize && known === 0 && !(lo || hi) && !ctx.diskless) {
    throw new JobFileError(
      ctx.where,
      "size",
      `job ${JSON.stringify(ctx.jobname)}: its files do not exist and it gives no size (fio: you ` +
        "need to specify size=)",
    );
  }
  if (!totalSize && ctx.diskless && !(lo || hi)) {
    throw new JobFileError(
      ctx.where,
      "size",
      `job ${JSON.stringify(ctx.jobname)}: needs size= (fio: the null engine has no files to size)`,
    );
  }
  const nr = fnames.length;
  const minBs = ctx.minBs;
  const fs = Math.floor(totalSize / nr);
  let extra = fs * nr < totalSize ? Math.floor((totalSize - fs * nr) / minBs) : 0;
  const sizes = new Taus88(ctx.fileSizeSeed);
  const files: FioFile[] = [];
  const pattern: PatternFile[] = [];
  for (const [i, name] of fnames.entries()) {
    const r = real[i]!;
    const start = startOffset(s, r < 0 ? 0 : r, subjob, minBs);
    let io: number;
    if (!lo) {
      io = fs;
      if (extra > 0) {
        extra--;
        io += minBs;
      }
      if (!io) io = Math.max(0, (r < 0 ? 0 : r) - start);
    } else if (r < lo || r > hi) {
      io = lo === hi ? lo - start : sizes.between(lo, hi) - start;
    } else io = r - start;
    if (sizePercent && sizePercent !== 100) {
      const fileSize = io + start;
      io = Math.min(Math.floor((fileSize * sizePercent) / 100), fileSize - start);
      io -= io % minBs;
    }
    const realSize = Math.max(r, io + start);
    const path = isAbsolute(name) ? name : join(ctx.cwd, name);
    files.push({ path, name, size: realSize });
    pattern.push({ name, size: realSize, start, ioSize: io });
  }
  return { files, pattern };
}
