/**
 * Regenerates core/fio_option_table.ts, the facts of every option fio 3.33
 * parses, from a checkout of fio's source at that tag: each option's name,
 * alias, value type, bounds, allowed words and default as fio's own tables
 * (options.c, the engines' and the profiles' option tables) declare them.
 *
 * ```sh
 * git clone --branch fio-3.33 https://github.com/axboe/fio /tmp/fio
 * deno run --allow-read --allow-write tools/fio_option_table.ts /tmp/fio
 * deno fmt core/fio_option_table.ts
 * ```
 *
 * Each entry has the shape core/fio_option_facts.ts declares (written there
 * once; the generated table imports it).
 *
 * Options fio declares twice (a build without a feature declares the
 * unsupported stand-in) keep the Linux build's declaration.
 *
 * @module
 */

import type { FioOptionFacts } from "../core/fio_option_facts.ts";

/** One option as fio declares it, built up field by field. */
type Declared = { -readonly [K in keyof FioOptionFacts]: FioOptionFacts[K] };

/** The brace-balanced `{ … }` entries of the first array after `marker`. */
function entries(src: string, marker: string): string[] {
  const start = src.indexOf(marker);
  if (start < 0) throw new Error(`${marker} not found`);
  const body = src.slice(src.indexOf("{", start) + 1);
  const out: string[] = [];
  let depth = 0, from = -1;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === "{") {
      if (depth === 0) from = i;
      depth++;
    } else if (c === "}") {
      depth--;
      if (depth === 0) out.push(body.slice(from, i + 1));
      if (depth < 0) break;
    }
  }
  return out;
}

function field(entry: string, key: string): string | undefined {
  // the option's own fields are at its top level: drop the posval block first
  const top = entry.replace(/\.posval\s*=\s*\{[\s\S]*?\n\t\t\},?/, "");
  const m = new RegExp(`\\.${key}\\s*=\\s*([^,\\n]+)`).exec(top);
  return m?.[1]?.trim();
}

function text(entry: string, key: string): string | undefined {
  const top = entry.replace(/\.posval\s*=\s*\{[\s\S]*?\n\t\t\},?/, "");
  const m = new RegExp(`\\.${key}\\s*=\\s*((?:"(?:[^"\\\\]|\\\\.)*"\\s*)+)`).exec(top);
  if (!m) return undefined;
  return [...m[1]!.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((x) => x[1]).join("");
}

/** The constants fio's option bounds are written with, as fio 3.33 defines them. */
const CONSTANTS: Record<string, number> = {
  "INT_MAX": 2 ** 31 - 1,
  "UINT_MAX": 2 ** 32 - 1,
  "MAX_NR_FILES": 256,
  "ZBD_MAX_WRITE_ZONES": 4096,
  "ZBD_MAX_OPEN_ZONES": 4096, // zbd_types.h
  "FIO_IO_U_LIST_MAX_LEN": 8,
  "FIO_MAX_MAJOR": 0,
  "FLOW_MAX_WEIGHT": 1000, // flow.h
  "DEF_LOG_ENTRIES": 1024, // iolog.h
  "MAX_LOG_ENTRIES": 1024 * 1024, // iolog.h: 1024 * DEF_LOG_ENTRIES
  "IOPRIO_MIN_PRIO": 0, // os/os-linux.h
  "IOPRIO_MAX_PRIO": 7,
  "IOPRIO_MIN_PRIO_CLASS": 0,
  "IOPRIO_MAX_PRIO_CLASS": 3,
  "sizeof(struct verify_header)": 40, // verify.h: 2+2+4+8+8+4+4+2+2+4 bytes
};

/** A bound's C expression: a number, a constant, or sums and products of them. */
function number(entry: string, key: string): number | undefined {
  const v = field(entry, key);
  if (v === undefined) return undefined;
  const terms = v.split("+").map((t) => t.split("*").map((f) => factor(f.trim())));
  if (terms.flat().some((f) => f === undefined)) return undefined;
  return terms.reduce((sum, t) => sum + t.reduce((p, f) => p! * f!, 1)!, 0);
}

function factor(f: string): number | undefined {
  const n = Number(f.replace(/U?L*$/i, ""));
  return Number.isFinite(n) && f !== "" ? n : CONSTANTS[f];
}

function declared(entry: string, extra: Partial<Declared>): Declared | undefined {
  const name = text(entry, "name");
  const type = field(entry, "type");
  if (!name || !type) return undefined;
  const d: Declared = { name, type: type.replace(/^FIO_OPT_/, ""), offs: 0, ...extra };
  const alias = text(entry, "alias");
  if (alias) d.alias = alias;
  const minval = number(entry, "minval");
  const maxval = number(entry, "maxval");
  if (minval !== undefined && minval !== 0) d.minval = minval;
  if (maxval !== undefined && maxval !== 0) d.maxval = maxval;
  if (field(entry, "pow2") === "1") d.pow2 = true;
  if (field(entry, "is_seconds") === "1") d.seconds = true;
  if (field(entry, "is_time") === "1") d.time = true;
  if (field(entry, "neg") === "1") d.neg = true;
  const def = text(entry, "def");
  if (def !== undefined) d.def = def;
  const posval = /\.posval\s*=\s*\{([\s\S]*?)\n\t\t\}/.exec(entry);
  if (posval) {
    const words = [...posval[1]!.matchAll(/\.ival\s*=\s*"([^"]*)"/g)].map((m) => m[1]!);
    if (words.length) d.words = words;
  }
  for (const k of ["off1", "off2", "off3"]) if (field(entry, k) !== undefined) d.offs++;
  if (field(entry, "cb")) d.cb = true;
  const help = text(entry, "help");
  if (help) d.help = help;
  return d;
}

function table(src: string, marker: string, extra: Partial<Declared> = {}): Declared[] {
  const out: Declared[] = [];
  for (const e of entries(src, marker)) {
    const d = declared(e, extra);
    if (!d) continue;
    const twin = out.findIndex((o) => o.name === d.name);
    if (twin < 0) out.push(d);
    else if (out[twin]!.type === "UNSUPPORTED") out[twin] = d; // keep the Linux build's
  }
  return out;
}

if (import.meta.main) {
  const root = Deno.args[0];
  if (!root) {
    console.error("usage: tools/fio_option_table.ts FIO_SOURCE_DIR");
    Deno.exit(2);
  }
  const read = (p: string) => Deno.readTextFileSync(`${root}/${p}`);
  const all = [
    ...table(read("options.c"), "struct fio_option fio_options[FIO_MAX_OPTS]"),
    ...table(read("engines/libaio.c"), "struct fio_option options[]", { engine: "libaio" }),
    ...table(read("engines/io_uring.c"), "struct fio_option options[]", { engine: "io_uring" }),
    ...table(read("engines/sync.c"), "struct fio_option options[]", { engine: "pvsync2" }),
    ...table(read("profiles/tiobench.c"), "struct fio_option options[]", { profile: "tiobench" }),
    ...table(read("profiles/act.c"), "struct fio_option options[]", { profile: "act" }),
  ];
  const version = read("FIO-VERSION-GEN").match(/DEF_VER=(\S+)/)?.[1] ?? "unknown";
  const lines = all.map((d) => `  ${JSON.stringify(d)},`);
  const out = `/**
 * Every option fio ${version.replace(/^fio-/, "")} parses, as fio's own option tables declare it
 * (options.c, the libaio, io_uring and pvsync2 engines, the tiobench and act
 * profiles): name, alias, value type, bounds, allowed words, default. Facts
 * only: what tierbench does with each is core/fio_options.ts.
 *
 * Generated by tools/fio_option_table.ts from fio's source; do not edit.
 *
 * @module
 */

import type { FioOptionFacts } from "./fio_option_facts.ts";

export type { FioOptionFacts };

/** fio's version these facts come from. */
export const FIO_OPTIONS_VERSION = ${JSON.stringify(version)};

/** Every option, in fio's order. */
export const FIO_OPTION_FACTS: readonly FioOptionFacts[] = [
${lines.join("\n")}
];
`;
  Deno.writeTextFileSync(new URL("../core/fio_option_table.ts", import.meta.url), out);
  console.log(`core/fio_option_table.ts: ${all.length} options of ${version}`);
}
