/**
 * The star protocol's messages: a JSON header and, for data, raw bytes.
 * Layout: 4-byte big-endian header length, the header's UTF-8 JSON, the payload.
 *
 * @module
 */

import type { Member } from "./types.ts";

/** Who a failure names, as the hub tells the others. */
export type Failure =
  | { readonly kind: "lost"; readonly rank: number; readonly node: string }
  | {
    readonly kind: "timeout";
    readonly ranks: readonly { rank: number; node: string }[];
    readonly timeoutMs: number;
  }
  | {
    readonly kind: "version";
    readonly mine: { rank: number; node: string; version: string };
    readonly theirs: { rank: number; node: string; version: string };
  }
  | { readonly kind: "error"; readonly message: string };

/** A message's header. */
export type Header =
  | { readonly t: "hello"; readonly member: Member }
  | { readonly t: "welcome"; readonly members: readonly Member[] }
  | { readonly t: "arrive" | "release" | "data"; readonly seq: number; readonly phase: string }
  | { readonly t: "fail"; readonly phase: string; readonly failure: Failure }
  /** Between steps, from the hub: a member was lost. */
  | { readonly t: "lost"; readonly rank: number; readonly node: string }
  /** Between steps: a member finished the phase (to the hub), everyone stops (from it). */
  | { readonly t: "done" | "stop"; readonly phase: string };

const enc = new TextEncoder();
const dec = new TextDecoder();

/** One message's bytes, in a buffer of its own (FFI may hold its address until sent). */
export function encode(header: Header, payload: Uint8Array = new Uint8Array(0)): Uint8Array {
  const json = enc.encode(JSON.stringify(header));
  const out = new Uint8Array(new ArrayBuffer(4 + json.length + payload.length));
  new DataView(out.buffer).setUint32(0, json.length);
  out.set(json, 4);
  out.set(payload, 4 + json.length);
  return out;
}

/** A message's header and payload (a view into `bytes`). */
export function decode(bytes: Uint8Array): { header: Header; payload: Uint8Array } {
  if (bytes.length < 4) throw new Error(`a message of ${bytes.length} bytes is too short`);
  const n = new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0);
  if (4 + n > bytes.length) {
    throw new Error(`a message's header runs past its ${bytes.length} bytes`);
  }
  const header = JSON.parse(dec.decode(bytes.subarray(4, 4 + n))) as Header;
  return { header, payload: bytes.subarray(4 + n) };
}
