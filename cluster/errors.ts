/**
 * The errors a caller of a {@linkcode import("./types.ts").Group} catches: a member lost, a member late,
 * members of different versions.
 *
 * @module
 */

/** A member's process or connection went away during a step. */
export class RankLostError extends Error {
  override name = "RankLostError";
  constructor(
    readonly rank: number,
    readonly node: string,
    readonly phase: string,
    options?: ErrorOptions,
  ) {
    super(`rank ${rank} on ${node} was lost during ${phase}`, options);
  }
}

/** A member did not reach a step in time. */
export class RankTimeoutError extends Error {
  override name = "RankTimeoutError";
  constructor(
    readonly ranks: readonly { rank: number; node: string }[],
    readonly phase: string,
    readonly timeoutMs: number,
  ) {
    super(
      `${
        ranks.map((r) => `rank ${r.rank} on ${r.node}`).join(", ")
      } did not reach ${phase} within ${timeoutMs / 1000} s`,
    );
  }
}

/** Members run different versions of tierbench. */
export class VersionMismatchError extends Error {
  override name = "VersionMismatchError";
  constructor(
    readonly mine: { rank: number; node: string; version: string },
    readonly theirs: { rank: number; node: string; version: string },
  ) {
    super(
      `tierbench versions differ: rank ${mine.rank} on ${mine.node} runs ${mine.version}, rank ${theirs.rank} on ${theirs.node} runs ${theirs.version}`,
    );
  }
}
