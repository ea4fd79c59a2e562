/**
 * Late verdicts (`late_verdict_ms`) in the routing log, through the real server, deadlines on the
 * TestClock: a request whose judge misses its deadline logs the timeout it was routed on, marked
 * `continues` (or `dropped` at the `max_late_verdicts` bound); the call's own judge line says what it
 * came to (`stored` with its verdict's evidence, `expired`, `dropped` — never `interrupted`); the next
 * request of the session logs the late stored decision it reused; and `switchyard replay` of the
 * file under the deployment that wrote it reproduces every request.
 *
 * The judge's answers are real network replies: the one meant to land late is sent 300 ms (wall
 * clock) after its request arrived, well after the clock was moved past its deadline; the test
 * waits for the late calls' lines in the log, never for a fixed time.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import type * as LateVerdict from "@switchyard-ts/routing/LateVerdict"
import * as PolicyReplay from "@switchyard-ts/server/PolicyReplay"
import * as RoutingLog from "@switchyard-ts/server/RoutingLog"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as TestServices from "effect/TestServices"
import { existsSync, mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { capabilityRoute, startServer } from "./harness.js"

const judgeModel = "lv-log-judge"

const deployment = (upstreamUrl: string): D.Deployment => ({
  llm_clients: { sim: D.client("openai_chat", upstreamUrl, { max_retries: 0 }) },
  targets: {
    judge: D.target(judgeModel, "sim"),
    weak: D.target("weak-model", "sim"),
    strong: D.target("strong-model", "sim")
  },
  routes: D.byId(capabilityRoute("late", "judge", {
    classify_trigger: "user_turn",
    judge_failure: "fail_open",
    judge_timeout_ms: 1000,
    late_verdict_ms: 5000,
    max_late_verdicts: 1
  }))
})

const verdict = FakeUpstream.ok(
  JSON.stringify({ crux: "a small fix", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: 0.9 }),
  { delayMs: 300 }
)

const userTurn = [{ role: "user", content: "fix the typo" }]
const continuation = [
  ...userTurn,
  { role: "assistant", content: "looking" },
  { role: "tool", content: "file contents", tool_call_id: "call_1" }
]

const post = (client: HttpClient.HttpClient, session: string, requestId: string, messages: ReadonlyArray<unknown>) =>
  Effect.flatMap(
    client.execute(
      HttpClientRequest.post("/v1/chat/completions").pipe(
        HttpClientRequest.setHeaders({ "x-switchyard-session-id": session, "x-request-id": requestId }),
        HttpClientRequest.bodyUnsafeJson({ model: "late", messages })
      )
    ),
    (response) => Effect.as(response.text, response.status)
  )

const decodeLine = Schema.decodeUnknownSync(Schema.parseJson(RoutingLog.Line))

/** The routing log's lines so far. */
const linesOf = (file: string): ReadonlyArray<RoutingLog.Line> =>
  existsSync(file)
    ? readFileSync(file, "utf8").split("\n").filter((line) => line !== "").map((raw) => decodeLine(raw))
    : []

/**
 * Wait (wall clock, bounded) until the log has a late call's line that came to `late` (`stored`,
 * `expired`: only a judge line says so), read as text while the writer may be appending.
 */
const logged = (file: string, late: LateVerdict.Outcome) =>
  TestServices.provideLive(
    Effect.sync(() => existsSync(file) ? readFileSync(file, "utf8") : "").pipe(
      Effect.repeat({ until: (text) => text.includes(`"late":"${late}"`), schedule: Schedule.spaced("5 millis") }),
      Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error(`no ${late} line`) })
    )
  )

/** The request's own judge fact at the deadline. */
const atDeadline = (late: "continues" | "dropped"): typeof RoutingLog.JudgeSummary.Type => ({
  model: judgeModel,
  outcome: "timeout",
  latency_ms: 1000,
  late
})

describe("late verdicts in the routing log", () => {
  it.scoped("the request logs its deadline, the late call its outcome; replay reproduces the run", () =>
    Effect.gen(function*() {
      const file = path.join(mkdtempSync(path.join(tmpdir(), "switchyard-lv-")), "routing.jsonl")
      const written = yield* Effect.scoped(Effect.gen(function*() {
        const { client, deployment: loaded, upstream } = yield* startServer(deployment, { routingLog: { path: file } })
        yield* upstream.script(judgeModel, [verdict, FakeUpstream.stall, FakeUpstream.stall])
        const judgeCalls = (n: number) =>
          upstream.awaitRequests((records) => records.filter((r) => r.model === judgeModel).length >= n)
        /** Send a request whose judge call is the `n`-th, and move the clock past its deadline. */
        const pastDeadline = (session: string, requestId: string, n: number) =>
          Effect.gen(function*() {
            const fiber = yield* Effect.fork(post(client, session, requestId, userTurn))
            yield* judgeCalls(n)
            yield* TestClock.adjust("1000 millis")
            return yield* Fiber.join(fiber)
          })

        // s1: routed at the deadline; its verdict lands late and is stored.
        assert.strictEqual(yield* pastDeadline("s1", "req-1", 1), 200)
        yield* logged(file, "stored")
        // s1's tool continuation reuses the late stored decision.
        assert.strictEqual(yield* post(client, "s1", "req-2", continuation), 200)
        // s2: its judge stalls past the deadline and goes on in the background (the route's one slot).
        assert.strictEqual(yield* pastDeadline("s2", "req-3", 2), 200)
        // s3: the slot is taken, so its call is dropped at the deadline.
        assert.strictEqual(yield* pastDeadline("s3", "req-4", 3), 200)
        // s2's call runs out of late_verdict_ms.
        yield* TestClock.adjust("5000 millis")
        yield* logged(file, "expired")
        return loaded
      }))

      const lines = linesOf(file)
      const responses = lines.filter((line): line is RoutingLog.ResponseLine => line.kind === "response")
      const judges = lines.filter((line): line is RoutingLog.JudgeLine => line.kind === "judge")
      const responseOf = (requestId: string) => responses.find((line) => line.request_id === requestId)
      const judgeOf = (requestId: string) => judges.filter((line) => line.request_id === requestId)

      // req-1: the timeout it was routed on, marked as going on; then its call's own record.
      const first = responseOf("req-1")
      assert.deepStrictEqual(first?.judge, {
        model: judgeModel,
        outcome: "timeout",
        latency_ms: 1000,
        late: "continues"
      })
      assert.deepStrictEqual(first?.evidence, { source: "fail-open", reason: "timeout", judge_model: judgeModel })
      assert.strictEqual(first?.tier, "strong")
      assert.deepStrictEqual(judgeOf("req-1").map((line) => [line.outcome, line.late, line.evidence]), [
        ["ok", "stored", { source: "llm-classifier", score: 0.9, threshold: 0.5, boundary: "supported" }]
      ])

      // req-2: the late stored decision, reused; its judge line came first in the file.
      const second = responseOf("req-2")
      assert.deepStrictEqual(second?.evidence, { source: "affinity", previous_source: "llm-classifier-late" })
      assert.deepStrictEqual(second?.stored_before, { target: "weak", tier: "weak", streak: null, late: true })
      assert.strictEqual(second?.tier, "weak")
      assert.strictEqual(second?.judge, null)
      const stored = lines.findIndex((line) => line.kind === "judge" && line.late === "stored")
      assert.isBelow(stored, lines.findIndex((line) => line.kind === "response" && line.request_id === "req-2"))

      // req-3: continues, then expires; req-4: dropped at its deadline — never `interrupted`.
      assert.deepStrictEqual(responseOf("req-3")?.judge, atDeadline("continues"))
      assert.deepStrictEqual(judgeOf("req-3").map((line) => [line.outcome, line.late]), [["timeout", "expired"]])
      assert.deepStrictEqual(responseOf("req-4")?.judge, atDeadline("dropped"))
      assert.deepStrictEqual(judgeOf("req-4").map((line) => [line.outcome, line.late]), [["timeout", "dropped"]])
      assert.isFalse(judges.some((line) => line.outcome === "interrupted"))
      assert.strictEqual(responses.length, 4)

      // Replayed under the deployment that wrote it: every request decides as logged.
      const [report] = yield* PolicyReplay.replay(lines, PolicyReplay.replayersOf(written))
      assert.strictEqual(report?.requests, 4)
      assert.strictEqual(report?.changed, 0)
      assert.strictEqual(report?.replayed.unknown, 0)
      assert.deepStrictEqual(report?.replayed, report?.logged)
      assert.deepStrictEqual(report?.logged.routed, { weak: 1, strong: 3 })
    }))
})
