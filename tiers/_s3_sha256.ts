/**
 * SHA-256 and HMAC-SHA256 for the s3 tier's client (its `sha256`, which the
 * SDK's SigV4 signer hashes and signs with), over node:crypto as the SDK's
 * own (`Sha256Node`) but with less work per request, the request signature
 * being two of these: a hash of the canonical request and an HMAC of the
 * string to sign. The SDK's copies each hash before it reads it (so that it
 * can go on), and builds an HMAC anew from its key each time (Deno's HMAC
 * pads the key and starts two hashes in JavaScript); here a digest ends the
 * hash, as the SDK's JavaScript implementation does, and the two hashes an
 * HMAC key starts (its inner and outer pad absorbed) are kept for the last
 * key seen and copied for each HMAC: the signer signs every request with the
 * same signing key. The bytes are those of `createHash` and `createHmac`.
 *
 * @module
 */

import { createHash, createHmac, type Hash, type Hmac } from "node:crypto";
import type { Checksum, SourceData } from "@smithy/types";

/** SHA-256's block size: keys up to this long are padded, longer ones hashed first. */
const BLOCK_BYTES = 64;

/** The HMAC key last seen (a copy of its bytes) and its two started hashes. */
let lastKey: { bytes: Uint8Array; inner: Hash; outer: Hash } | undefined;

/** Bytes of `data` without a copy (a string as it is: node:crypto reads it as UTF-8). */
function bytesOf(data: SourceData): Uint8Array | string {
  if (typeof data === "string") return data;
  if (ArrayBuffer.isView(data)) {
    return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  }
  return new Uint8Array(data);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The inner and outer hashes of an HMAC with `key` (≤ one block), its pads absorbed. */
function paddedHashes(key: Uint8Array): { inner: Hash; outer: Hash } {
  if (lastKey !== undefined && sameBytes(lastKey.bytes, key)) return lastKey;
  const inner = new Uint8Array(BLOCK_BYTES).fill(0x36);
  const outer = new Uint8Array(BLOCK_BYTES).fill(0x5c);
  for (let i = 0; i < key.byteLength; i++) {
    inner[i]! ^= key[i]!;
    outer[i]! ^= key[i]!;
  }
  lastKey = {
    bytes: key.slice(),
    inner: createHash("sha256").update(inner),
    outer: createHash("sha256").update(outer),
  };
  return lastKey;
}

/**
 * What the HMAC of the data hashed into `inner` is: the outer hash of its digest.
 */
class PaddedHmac {
  readonly #inner: Hash;
  readonly #outer: Hash;

  constructor(key: Uint8Array) {
    const started = paddedHashes(key);
    this.#inner = started.inner.copy();
    this.#outer = started.outer;
  }

  update(data: Uint8Array | string): this {
    this.#inner.update(data);
    return this;
  }

  digest(): Uint8Array {
    return this.#outer.copy().update(this.#inner.digest()).digest();
  }
}

/**
 * A SHA-256 hash, or with a secret an HMAC-SHA256, as the SDK's signer and
 * checksums use one: `update` with the data, then `digest` once (`reset`
 * starts again; an update after the digest throws, as with the SDK's
 * JavaScript implementation).
 *
 * @example
 * ```ts
 * import { Sha256 } from "./_s3_sha256.ts";
 * const h = new Sha256();
 * h.update("abc");
 * const hex = Array.from(await h.digest(), (b) => b.toString(16).padStart(2, "0")).join("");
 * console.assert(hex.startsWith("ba7816bf"));
 * ```
 */
export class Sha256 implements Checksum {
  readonly #secret: SourceData | undefined;
  #hash: Hash | Hmac | PaddedHmac;
  #digest: Promise<Uint8Array> | undefined;

  constructor(secret?: SourceData) {
    this.#secret = secret;
    this.#hash = this.#start();
  }

  #start(): Hash | Hmac | PaddedHmac {
    if (this.#secret === undefined) return createHash("sha256");
    const key = bytesOf(this.#secret);
    if (typeof key === "string" || key.byteLength > BLOCK_BYTES) {
      return createHmac("sha256", key);
    }
    return new PaddedHmac(key);
  }

  update(data: SourceData): void {
    if (this.#digest !== undefined) {
      throw new Error("Attempted to update an already finished hash.");
    }
    this.#hash.update(bytesOf(data));
  }

  digest(): Promise<Uint8Array> {
    if (this.#digest === undefined) {
      try {
        const d = this.#hash.digest();
        this.#digest = Promise.resolve(new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
      } catch (e) {
        this.#digest = Promise.reject(e);
      }
    }
    return this.#digest;
  }

  reset(): void {
    this.#hash = this.#start();
    this.#digest = undefined;
  }
}
