/**
 * The `[sessions]` store keys: `store = "memory" | "redis"`, `url` (redis only, a redis:// or
 * rediss:// URL, kept Redacted and never echoed in errors), `max_entries` (memory only), `ttl_ms`
 * (both), and the defaults and limits of the memory store. One test per rule.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Deployment } from "@switchyard-ts/config/Deployment"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Rejections from "./rejections.js"
import { doc, expectInvalid, load } from "./support.js"

const sessions = (lines: string) => doc({ more: `[sessions]\n${lines}` })

/** `[sessions]` when no key is set. */
const defaults: Deployment["sessions"] = { store: "memory", url: Option.none(), maxEntries: 100_000, ttlMs: 3_600_000 }

describe("DeploymentToml.parse [sessions] store", () => {
  it.effect("store = memory is the default and may be spelled out", () =>
    Effect.gen(function*() {
      const deployment = yield* load(sessions("store = \"memory\"\nmax_entries = 5"))
      assert.deepStrictEqual(deployment.sessions, { ...defaults, maxEntries: 5 })
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

  Rejections.lines("sessions", (line) => sessions(line))([
    ["store = \"postgres\"", "unknown variant \"postgres\"; expected one of \"memory\", \"redis\""],
    ["store = 1", "got integer"]
  ])

  Rejections.each([
    [
      "url is required with store = redis",
      sessions("store = \"redis\""),
      "sessions.url",
      "sessions.url: url is required when store = \"redis\""
    ],
    [
      "url is rejected with store = memory",
      sessions("store = \"memory\"\nurl = \"redis://127.0.0.1\""),
      "sessions.url",
      "url applies to store = \"redis\" only"
    ],
    [
      "url is rejected without a store (memory by default)",
      sessions("url = \"redis://127.0.0.1\""),
      "sessions.url",
      "url applies to store = \"redis\" only"
    ]
  ])

  it.effect("url must be a redis:// or rediss:// URL, and the message does not repeat it", () =>
    Effect.gen(function*() {
      const error = yield* expectInvalid(
        sessions("store = \"redis\"\nurl = \"http://user:hunter2@127.0.0.1:6379\""),
        "sessions.url",
        "url must be a redis:// or rediss:// URL"
      )
      assert.notInclude(error.message, "hunter2")
    }))

  Rejections.each([
    [
      "url must parse as a URL",
      sessions("store = \"redis\"\nurl = \"127.0.0.1:6379\""),
      "sessions.url",
      "url must be a redis:// or rediss:// URL"
    ],
    [
      "url must name a host",
      sessions("store = \"redis\"\nurl = \"redis://\""),
      "sessions.url",
      "url must be a redis:// or rediss:// URL"
    ],
    ["url is a string", sessions("store = \"redis\"\nurl = 6379"), "sessions.url", "expected a string, got integer"],
    [
      "max_entries is rejected with store = redis",
      sessions("store = \"redis\"\nurl = \"redis://127.0.0.1\"\nmax_entries = 10"),
      "sessions.max_entries",
      "max_entries applies to store = \"memory\" only"
    ],
    [
      "ttl_ms is range-checked with store = redis too",
      sessions("store = \"redis\"\nurl = \"redis://127.0.0.1\"\nttl_ms = 0"),
      "sessions.ttl_ms",
      "must be at least 1, got 0"
    ]
  ])
})

describe("DeploymentToml.parse [sessions] defaults and limits", () => {
  it.effect("defaults when absent, and for an empty table", () =>
    Effect.gen(function*() {
      for (const text of [doc(), sessions("")]) {
        assert.deepStrictEqual((yield* load(text)).sessions, defaults)
      }
    }))

  it.effect("values", () =>
    Effect.gen(function*() {
      const deployment = yield* load(sessions("max_entries = 1\nttl_ms = 250"))
      assert.deepStrictEqual(deployment.sessions, { store: "memory", url: Option.none(), maxEntries: 1, ttlMs: 250 })
    }))

  Rejections.lines("sessions", (line) => sessions(line))([
    ["max_entries = 0", "sessions.max_entries: must be at least 1, got 0"],
    ["max_entries = 10.0", "expected an integer, got float"],
    ["ttl_ms = -1", "must be at least 1, got -1"],
    ["ttl_ms = \"1h\"", "expected an integer, got string"],
    ["host = \"h\"", "unknown field"]
  ])

  Rejections.each([
    ["sessions is a table", doc({ top: "sessions = 3" }), "sessions", "expected a table, got integer"],
    [
      "sessions rules come after routes",
      doc({ route: "context_window = 0", more: "[sessions]\nmax_entries = 0" }),
      "routes.r.context_window",
      "must be greater than zero"
    ]
  ])
})
