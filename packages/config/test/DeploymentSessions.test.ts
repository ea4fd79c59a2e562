/**
 * The `[sessions]` store keys: `store = "memory" | "redis"`, `url` (redis only, a redis:// or
 * rediss:// URL, kept Redacted and never echoed in errors), `max_entries` (memory only), `ttl_ms`
 * (both). One test per rule.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { doc, expectInvalid, load } from "./support.js"

const sessions = (lines: string) => doc({ more: `[sessions]\n${lines}` })

describe("DeploymentToml.parse [sessions] store", () => {
  it.effect("store = memory is the default and may be spelled out", () =>
    Effect.gen(function*() {
      const deployment = yield* load(sessions("store = \"memory\"\nmax_entries = 5"))
      assert.deepStrictEqual(deployment.sessions, {
        store: "memory",
        url: Option.none(),
        maxEntries: 5,
        ttlMs: 3_600_000
      })
    }))

  it.effect("store = redis with a url and ttl_ms", () =>
    Effect.gen(function*() {
      const deployment = yield* load(
        sessions("store = \"redis\"\nurl = \" redis://:pw@127.0.0.1:6379/2 \"\nttl_ms = 60000")
      )
      assert.strictEqual(deployment.sessions.store, "redis")
      assert.strictEqual(deployment.sessions.ttlMs, 60_000)
      assert.deepStrictEqual(
        Option.map(deployment.sessions.url, Redacted.value),
        Option.some("redis://:pw@127.0.0.1:6379/2")
      )
      // The URL may hold a password: it stays Redacted when the deployment is printed.
      assert.notInclude(String(Option.getOrThrow(deployment.sessions.url)), "pw")
    }))

  it.effect("a rediss:// url is accepted", () =>
    Effect.gen(function*() {
      const deployment = yield* load(sessions("store = \"redis\"\nurl = \"rediss://cache.example.com:6380\""))
      assert.strictEqual(deployment.sessions.store, "redis")
    }))

  it.effect("store must be memory or redis", () =>
    expectInvalid(
      sessions("store = \"postgres\""),
      "sessions.store",
      "unknown variant \"postgres\"; expected one of \"memory\", \"redis\""
    ))

  it.effect("store is a string", () => expectInvalid(sessions("store = 1"), "sessions.store", "got integer"))

  it.effect("url is required with store = redis", () =>
    expectInvalid(
      sessions("store = \"redis\""),
      "sessions.url",
      "sessions.url: url is required when store = \"redis\""
    ))

  it.effect("url is rejected with store = memory", () =>
    expectInvalid(
      sessions("store = \"memory\"\nurl = \"redis://127.0.0.1\""),
      "sessions.url",
      "url applies to store = \"redis\" only"
    ))

  it.effect("url is rejected without a store (memory by default)", () =>
    expectInvalid(sessions("url = \"redis://127.0.0.1\""), "sessions.url", "url applies to store = \"redis\" only"))

  it.effect("url must be a redis:// or rediss:// URL, and the message does not repeat it", () =>
    Effect.gen(function*() {
      const error = yield* expectInvalid(
        sessions("store = \"redis\"\nurl = \"http://user:hunter2@127.0.0.1:6379\""),
        "sessions.url",
        "url must be a redis:// or rediss:// URL"
      )
      assert.notInclude(error.message, "hunter2")
    }))

  it.effect("url must parse as a URL", () =>
    expectInvalid(
      sessions("store = \"redis\"\nurl = \"127.0.0.1:6379\""),
      "sessions.url",
      "url must be a redis:// or rediss:// URL"
    ))

  it.effect("url must name a host", () =>
    expectInvalid(
      sessions("store = \"redis\"\nurl = \"redis://\""),
      "sessions.url",
      "url must be a redis:// or rediss:// URL"
    ))

  it.effect("url is a string", () =>
    expectInvalid(sessions("store = \"redis\"\nurl = 6379"), "sessions.url", "expected a string, got integer"))

  it.effect("max_entries is rejected with store = redis", () =>
    expectInvalid(
      sessions("store = \"redis\"\nurl = \"redis://127.0.0.1\"\nmax_entries = 10"),
      "sessions.max_entries",
      "max_entries applies to store = \"memory\" only"
    ))

  it.effect("ttl_ms is range-checked with store = redis too", () =>
    expectInvalid(
      sessions("store = \"redis\"\nurl = \"redis://127.0.0.1\"\nttl_ms = 0"),
      "sessions.ttl_ms",
      "must be at least 1, got 0"
    ))
})
