/**
 * What the profile tests share: the error a hardware profile is refused with.
 *
 * @module
 */

import assert from "node:assert/strict";
import { ConfigError } from "../core/errors.ts";
import { ProfileError } from "../schema/profile.ts";
import { loadProfile } from "../solver/profile.ts";

/** The error loading `doc` as a profile throws: a ProfileError (a ConfigError) of one line. */
export function profileErrorOf(doc: unknown): ProfileError {
  try {
    loadProfile(doc, "p.json");
  } catch (e) {
    assert.ok(e instanceof ProfileError && e instanceof ConfigError, `${e}`);
    assert.ok(!e.message.includes("\n"), e.message);
    return e;
  }
  assert.fail("no error");
}
