/**
 * Each table's Schema on its own, as a library user decodes one table: the same spec a whole
 * deployment gives, unknown keys rejected whatever the parse options, rules failing at their key
 * path, references resolved in the given targets, and no encoding back.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Target } from "@switchyard-ts/client/Target"
import * as LlmClientTable from "@switchyard-ts/config/LlmClientTable"
import * as SessionsTable from "@switchyard-ts/config/SessionsTable"
import * as TargetTable from "@switchyard-ts/config/TargetTable"
import * as AdvisorRouteTable from "@switchyard-ts/routing/AdvisorRouteTable"
import * as CapabilityRouteTable from "@switchyard-ts/routing/CapabilityRouteTable"
import * as SubagentsTable from "@switchyard-ts/routing/SubagentsTable"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Toml from "smol-toml"
import { classifier, load, secret, withEnv } from "./support.js"

/** A capability route `[routes.auto]` with late verdicts (judge: the `judge` target). */
const deployment = classifier({
  route: [
    "threshold_step = 0.01",
    "classify_trigger = \"new_session\"",
    "judge_failure = \"fail_open\"",
    "judge_timeout_ms = 1500",
    "late_verdict_ms = 800"
  ].join("\n")
})

/** A TOML document's table at `keys`, as the loader sees it (integers as bigints). */
const tableAt = (text: string, ...keys: ReadonlyArray<string>): unknown =>
  keys.reduce<unknown>(
    (table, key) => (typeof table === "object" && table !== null
      ? Object.entries(table).find(([k]) => k === key)?.[1]
      : undefined),
    Toml.parse(text, { integersAsBigInt: true })
  )

/** The first issue of a failed decode: its key path and message. */
const firstIssue = <A>(result: Either.Either<A, ParseResult.ParseError>) => {
  assert.isTrue(Either.isLeft(result), "the decode should fail")
  const [first] = Either.isLeft(result) ? ParseResult.ArrayFormatter.formatErrorSync(result.left) : []
  return { path: first?.path.join("."), tag: first?._tag, message: first?.message }
}

const named = <A extends { readonly name: string }>(items: ReadonlyArray<A>, name: string): A =>
  items.find((item) => item.name === name) ?? assert.fail(`no ${name}`)

const targetsOf = (targets: ReadonlyArray<Target>): ReadonlyMap<string, Target> =>
  new Map(targets.map((target) => [target.name, target]))

describe("route table schemas", () => {
  it.effect("a capability route table decodes alone to the spec the whole deployment gives", () =>
    Effect.gen(function*() {
      const loaded = yield* load(deployment)
      const schema = CapabilityRouteTable.schema({ name: "auto", targets: targetsOf(loaded.targets) })
      const spec = yield* Schema.decodeUnknown(schema)(tableAt(deployment, "routes", "auto"))
      assert.deepStrictEqual(spec, loaded.routes.find((route) => route.id === "auto"))
      assert.strictEqual(spec.judge, named(loaded.targets, "judge"))
      assert.deepStrictEqual(spec.lateVerdictMs, Option.some(800))
      assert.strictEqual(spec.maxLateVerdicts, 16)
    }))

  it.effect("unknown keys are rejected with their path under the default parse options", () =>
    Effect.gen(function*() {
      const loaded = yield* load(deployment)
      const schema = CapabilityRouteTable.schema({ name: "auto", targets: targetsOf(loaded.targets) })
      const table = tableAt(`${deployment}threshold = 0.5\n`, "routes", "auto")
      const issue = firstIssue(Schema.decodeUnknownEither(schema)(table))
      assert.deepStrictEqual([issue.path, issue.tag], ["threshold", "Unexpected"])
      assert.include(issue.message, "\"base_threshold\" | \"threshold_step\"")
    }))

  it.effect("a rule fails at its key path, with the loader's wording", () =>
    Effect.gen(function*() {
      const loaded = yield* load(deployment)
      const schema = CapabilityRouteTable.schema({ name: "auto", targets: targetsOf(loaded.targets) })
      const stepped = tableAt(deployment.replace("threshold_step = 0.01", "threshold_step = 0.1"), "routes", "auto")
      assert.deepStrictEqual(firstIssue(Schema.decodeUnknownEither(schema)(stepped)), {
        path: "threshold_step",
        tag: "Type",
        message: "base_threshold + 2 * threshold_step must be at most 1, got 1.15"
      })
      const late = tableAt(deployment.replace("judge_failure = \"fail_open\"", ""), "routes", "auto")
      assert.deepStrictEqual(firstIssue(Schema.decodeUnknownEither(schema)(late)), {
        path: "late_verdict_ms",
        tag: "Type",
        message: "late_verdict_ms requires judge_failure = \"fail_open\""
      })
    }))

  it.effect("references resolve in the targets the schema is given", () =>
    Effect.gen(function*() {
      const loaded = yield* load(deployment)
      const withoutStrong = targetsOf(loaded.targets.filter((target) => target.name !== "strong"))
      const schema = CapabilityRouteTable.schema({ name: "auto", targets: withoutStrong })
      assert.deepStrictEqual(
        firstIssue(Schema.decodeUnknownEither(schema)(tableAt(deployment, "routes", "auto"))),
        { path: "strong_target", tag: "Type", message: "references unknown target \"strong\"" }
      )
    }))

  it.effect("a decoded table is not encoded back", () =>
    Effect.gen(function*() {
      const loaded = yield* load(deployment)
      const schema = CapabilityRouteTable.schema({ name: "auto", targets: targetsOf(loaded.targets) })
      const spec = yield* Schema.decodeUnknown(schema)(tableAt(deployment, "routes", "auto"))
      const encoded = Schema.encodeEither(schema)(spec)
      assert.isTrue(Either.isLeft(encoded))
      assert.include(Either.isLeft(encoded) ? encoded.left.message : "", "is not encoded back")
    }))

  it.effect("an advisor table checks its gate pattern", () =>
    Effect.gen(function*() {
      const loaded = yield* load(deployment)
      const schema = AdvisorRouteTable.schema({ name: "gate", targets: targetsOf(loaded.targets) })
      const table = {
        id: "gate",
        type: "advisor",
        executor_target: "weak",
        advisor_target: "strong",
        gate_trigger: "pattern",
        gate_trigger_pattern: "(unclosed"
      }
      const issue = firstIssue(Schema.decodeUnknownEither(schema)(table))
      assert.strictEqual(issue.path, "gate_trigger_pattern")
      assert.include(issue.message, "gate_trigger_pattern is not a valid regular expression")
      const spec = yield* Schema.decodeUnknown(schema)({ ...table, gate_trigger_pattern: "DONE$", max_reviews: 3n })
      assert.deepStrictEqual(spec.gateTriggerPattern, Option.some(/DONE$/u))
      assert.strictEqual(spec.maxReviews, 3)
      assert.isTrue(spec.failOpen)
    }))
})

describe("subagents table schema", () => {
  it.effect("a classifier's mode must be custom; its targets resolve in the given ones", () =>
    Effect.gen(function*() {
      const loaded = yield* load(deployment)
      const schema = SubagentsTable.schema(targetsOf(loaded.targets))
      const classifier = {
        type: "llm_classifier",
        mode: "custom",
        classifier_target: "judge",
        targets: ["weak", "strong"],
        default_target: "weak",
        prompt: "Which target?",
        response_schema: "{\"type\": \"object\", \"properties\": {\"t\": {\"type\": \"string\"}}}",
        policy: { type: "target_selector", selector: "/t" },
        classify_trigger: "new_session"
      }
      const spec = yield* Schema.decodeUnknown(schema)(classifier)
      assert.isTrue(spec.type === "llm_classifier" && spec.classifyTrigger === "new_session")
      assert.isTrue(spec.type === "llm_classifier" && spec.defaultTarget.name === "weak")
      assert.deepStrictEqual(firstIssue(Schema.decodeUnknownEither(schema)({ ...classifier, mode: "capability" })), {
        path: "mode",
        tag: "Type",
        message: "subagents llm_classifier only supports mode custom"
      })
      assert.deepStrictEqual(firstIssue(Schema.decodeUnknownEither(schema)({ type: "random" })), {
        path: "type",
        tag: "Type",
        message: "unknown variant \"random\"; expected one of \"passthrough\", \"llm_classifier\""
      })
      const passthrough = yield* Schema.decodeUnknown(schema)({ type: "passthrough", target: "strong" })
      assert.deepStrictEqual(passthrough, {
        type: "passthrough",
        target: named(loaded.targets, "strong")
      })
    }))
})

describe("client, target and sessions table schemas", () => {
  it.effect("a client reads its key through Config, redacted", () =>
    Effect.gen(function*() {
      const schema = LlmClientTable.schema({ name: "hosted" })
      const client = yield* Schema.decodeUnknown(schema)({
        format: "anthropic_messages",
        base_url: "https://api.example.com/",
        api_key_env: "HOSTED_API_KEY"
      }).pipe(withEnv([["HOSTED_API_KEY", secret]]))
      assert.strictEqual(client.baseUrl, "https://api.example.com")
      assert.strictEqual(client.maxRetries, 2)
      assert.notInclude(String(client.apiKey), secret)
      const missing = yield* Effect.either(
        Schema.decodeUnknown(schema)({ format: "openai_chat", base_url: "http://h", api_key_env: "NOPE" }).pipe(
          withEnv([])
        )
      )
      assert.deepStrictEqual(firstIssue(missing), {
        path: "api_key_env",
        tag: "Type",
        message: "could not read api_key_env NOPE"
      })
    }))

  it.effect("failure_cooldown_ms is a breaker that opens on the first failed call; 0 is none; not with breaker", () =>
    Effect.gen(function*() {
      const schema = LlmClientTable.schema({ name: "hosted" })
      const base = { format: "openai_chat", base_url: "http://h" }
      const cooling = yield* Schema.decodeUnknown(schema)({ ...base, failure_cooldown_ms: 2500n })
      assert.deepStrictEqual(cooling.breaker, Option.some({ failureThreshold: 1, cooldownMs: 2500 }))
      const off = yield* Schema.decodeUnknown(schema)({ ...base, failure_cooldown_ms: 0n })
      assert.deepStrictEqual(off.breaker, Option.none())
      const both = firstIssue(
        Schema.decodeUnknownEither(schema)({
          ...base,
          failure_cooldown_ms: 2500n,
          breaker: { failure_threshold: 3n, cooldown_ms: 1000n }
        })
      )
      assert.deepStrictEqual(both, {
        path: "failure_cooldown_ms",
        tag: "Type",
        message: "failure_cooldown_ms and breaker are two ways to write one circuit breaker: give one of them"
      })
      const negative = firstIssue(Schema.decodeUnknownEither(schema)({ ...base, failure_cooldown_ms: -1n }))
      assert.strictEqual(negative.path, "failure_cooldown_ms")
    }))

  it.effect("a target joins its client from the given clients", () =>
    Effect.gen(function*() {
      const loaded = yield* load(deployment)
      const clients = new Map(loaded.clients.map((client) => [client.name, client]))
      const target = yield* Schema.decodeUnknown(TargetTable.schema({ name: "weak", clients }))({
        id: "small-coder",
        llm_client: "hosted",
        extra_body: { temperature: 0.2, top_k: 40n }
      })
      assert.deepStrictEqual(target, {
        name: "weak",
        id: "small-coder",
        client: named(loaded.clients, "hosted"),
        extraBody: { temperature: 0.2, top_k: 40 }
      })
    }))

  it.effect("a target's reasoning_effort: kept as given; refused when blank or padded, and on an anthropic_messages client", () =>
    Effect.gen(function*() {
      const loaded = yield* load(deployment)
      const hosted = named(loaded.clients, "hosted")
      const anthropic = { ...hosted, name: "frontier", format: "anthropic_messages" as const }
      const clients = new Map([["hosted", hosted], ["frontier", anthropic]])
      const schema = TargetTable.schema({ name: "weak", clients })
      const target = yield* Schema.decodeUnknown(schema)({ id: "m", llm_client: "hosted", reasoning_effort: "high" })
      assert.strictEqual(target.reasoningEffort, "high")
      const plain = yield* Schema.decodeUnknown(schema)({ id: "m", llm_client: "hosted" })
      assert.isFalse("reasoningEffort" in plain)
      for (const effort of ["", " high"]) {
        assert.deepStrictEqual(
          firstIssue(Schema.decodeUnknownEither(schema)({ id: "m", llm_client: "hosted", reasoning_effort: effort })),
          {
            path: "reasoning_effort",
            tag: "Type",
            message: "must be a non-empty effort name without surrounding whitespace"
          }
        )
      }
      assert.deepStrictEqual(
        firstIssue(Schema.decodeUnknownEither(schema)({ id: "m", llm_client: "frontier", reasoning_effort: "high" })),
        {
          path: "reasoning_effort",
          tag: "Type",
          message: "is not supported on anthropic_messages clients (llm client \"frontier\")"
        }
      )
    }))

  it.effect("an empty [sessions] table decodes to the defaults; redis needs a url", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* Schema.decodeUnknown(SessionsTable.schema)({}), {
        store: "memory",
        url: Option.none(),
        maxEntries: 100_000,
        ttlMs: 3_600_000
      })
      assert.deepStrictEqual(firstIssue(Schema.decodeUnknownEither(SessionsTable.schema)({ store: "redis" })), {
        path: "url",
        tag: "Type",
        message: "url is required when store = \"redis\""
      })
    }))
})
