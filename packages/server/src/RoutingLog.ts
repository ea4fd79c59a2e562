/**
 * The routing log (`--routing-log-file PATH`): one JSON line per routed response, written once its
 * answer is sent (a stream: once its writing ended), and one per judge call, in the JSONL format of
 * docs/operations.md ({@link Line}); and it feeds the per-session totals of `GET /v1/session-stats`
 * (`SessionTotals`: the provided store, else one in memory).
 *
 * Appending never blocks a request: {@link RoutingLog.unsafeAppend} adds the line to the session
 * totals (which never block either) and offers the record to a bounded in-memory queue, synchronously; one writer fiber drains the
 * queue in batches and appends them to the file. A full queue drops the record
 * (`switchyard_routing_log_dropped_total`); a failed open or write loses that batch
 * (`switchyard_routing_log_write_errors_total`, one WARN per minute at most) and never reaches a
 * request. The file is opened in append mode and reopened before the next batch after a SIGHUP
 * (log rotation: `mv file file.1; kill -HUP pid`); each line is written once, to the file open at
 * the time. Closing the layer's scope (shutdown) writes what is still queued, then closes the file.
 *
 * Records carry ids (session, agent, request, task, trial), never other header values, keys or
 * message content.
 */
import * as TaggedMetric from "@switchyard-ts/client/TaggedMetric"
import type { Usage } from "@switchyard-ts/protocol/OpenAiChat"
import * as Evidence from "@switchyard-ts/routing/Evidence"
import * as Pricing from "@switchyard-ts/routing/Pricing"
import * as RoutingRecord from "@switchyard-ts/routing/RoutingRecord"
import type * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import { type FileHandle, open } from "node:fs/promises"
import * as SessionTotals from "./SessionTotals.js"

/**
 * Token counts of a line (absent fields of the usage count 0; `total_tokens` = prompt + completion)
 * and the call's cost: `{usd, source}` (`estimated` from the pricing table, `provider_reported`
 * from the usage's own `cost`), or `null` when unknown — no price for the model, no usage (the call
 * failed, or answered without one), no pricing file. Lines of older versions have no `cost`: they
 * decode with `null`.
 */
const Tokens = {
  prompt_tokens: Schema.Number,
  cached_tokens: Schema.Number,
  cache_creation_tokens: Schema.Number,
  completion_tokens: Schema.Number,
  reasoning_tokens: Schema.Number,
  total_tokens: Schema.Number,
  cost: Schema.optionalWith(Pricing.CallCost, { default: () => null })
}

/** Who sent the request a line is about, and which route it addressed. */
const Identity = {
  /** When the line was made (RFC 3339, milliseconds, UTC). */
  ts: Schema.String,
  /** `x-switchyard-intake-task`. */
  task: Schema.NullOr(Schema.String),
  /** `x-switchyard-trial-id`. */
  trial_id: Schema.NullOr(Schema.String),
  /** The normalized session id, else `proxy_x_session_id`. */
  session_id: Schema.NullOr(Schema.String),
  /** The normalized agent id. */
  agent_id: Schema.NullOr(Schema.String),
  /** The correlation id (`x-switchyard-request-id` → `x-request-id` → `x-client-request-id`). */
  request_id: Schema.NullOr(Schema.String),
  /** The route the request addressed (its `model`). */
  route: Schema.String,
  /** The same route id under the compatible system's name (absent from lines of older versions). */
  route_id: Schema.optionalWith(Schema.String, { exact: true }),
  /**
   * `x-switchyard-origin`: the caller's own label for where the request came from (never inferred),
   * trimmed; written `null` when the header is absent, empty, blank or not text. Lines of older
   * versions have no `origin`: they decode with `null`.
   */
  origin: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null })
}

/** A session's stored decision on a classifier route (`RoutingRecord.StoredDecision`). */
export const StoredDecision = RoutingRecord.StoredDecision
export type StoredDecision = RoutingRecord.StoredDecision

/** An advisor gate's facts of one request (`RoutingRecord.AdvisorFacts`). */
export const AdvisorFacts = RoutingRecord.AdvisorFacts
export type AdvisorFacts = RoutingRecord.AdvisorFacts

/** How a judge call ended: `ok`, an evidence reason, or `interrupted`. */
export const JudgeOutcome = RoutingRecord.JudgeOutcome

/**
 * What became of a judge call that missed its request's deadline on a route with `late_verdict_ms`
 * (`LateVerdict.Outcome`, the `outcome` label of `switchyard_classifier_late_verdicts_total`).
 */
export const LateOutcome = Schema.Literal("stored", "superseded", "invalid", "failed", "expired", "dropped")

/** The last judge call made while routing a request (`RoutingRecord.JudgeSummary`). */
export const JudgeSummary = RoutingRecord.JudgeSummary

/**
 * How a response ended: `ok`; `error` (an error answer: `status` and `error` say which);
 * `stream_error` (a stream failed after its headers); `incomplete` (the caller went away first).
 */
export const ResponseOutcome = Schema.Literal("ok", "error", "stream_error", "incomplete")
export type ResponseOutcome = typeof ResponseOutcome.Type

/** The line of one routed response. */
export const ResponseLine = Schema.Struct({
  kind: Schema.Literal("response"),
  ...Identity,
  /** The model that served the answer (the route id when none did); "" when nothing was served. */
  model: Schema.String,
  wire_format: Schema.String,
  streaming: Schema.Boolean,
  status: Schema.Number,
  outcome: ResponseOutcome,
  /** What routing decided, and from which facts (`RoutingRecord.fields`). */
  ...RoutingRecord.fields,
  /** From the request's arrival to the end of its answer. */
  latency_ms: Schema.Number,
  ...Tokens,
  /**
   * The model the answer is measured against (`Route.baseline`: the route's `baseline_target` or its
   * default; the served model when the route has none); null without a decided route. Absent from
   * lines of older versions.
   */
  baseline_model: Schema.optionalWith(Schema.NullOr(Schema.String), { exact: true }),
  /**
   * What the answer would have cost at `baseline_model` with the same token counts
   * (`Pricing.baselineCostOf`: always `estimated`, unless the baseline model served it), or `null`
   * when unknown. Absent from lines of older versions (unknown).
   */
  baseline_cost: Schema.optionalWith(Pricing.CallCost, { exact: true })
})
export type ResponseLine = typeof ResponseLine.Type

/** The line of one judge call (`tier` is always `classifier`, as in the compatible system). */
export const JudgeLine = Schema.Struct({
  kind: Schema.Literal("judge"),
  ...Identity,
  /** The judge's model id. */
  model: Schema.String,
  tier: Schema.Literal("classifier"),
  outcome: JudgeOutcome,
  latency_ms: Schema.Number,
  /**
   * Late verdicts only, a call that missed its request's deadline: what it came to — `stored`,
   * `superseded`, `invalid`, `failed`, `expired` (written when it settled), `dropped` (aborted at the
   * deadline, written then). Absent otherwise.
   */
  late: Schema.optionalWith(LateOutcome, { exact: true }),
  /** A late call's valid verdict (`stored`, `superseded`): the evidence it would have given its request. */
  evidence: Schema.optionalWith(Evidence.Evidence, { exact: true }),
  ...Tokens
})
export type JudgeLine = typeof JudgeLine.Type

/**
 * The kinds of a routing-time call's line (`RoutingFacts.RoutingCallKind` but the judge's, whose
 * calls have `judge` lines): an advisor's review, an escalation route's weak, strong or fallback
 * turn, an advisor route's executor turn or its turn after a REDO.
 */
export const CallKind = Schema.Literal(
  "advisor_review",
  "weak_turn",
  "strong_turn",
  "strong_fallback_turn",
  "executor_turn",
  "redo_turn"
)
export type CallKind = typeof CallKind.Type

/**
 * The line of one model call made while routing a request that did not become its answer (the call
 * whose reply the route served is the request's `response` line): a review, a discarded or failed
 * turn. Lines of older versions have none.
 */
export const CallLine = Schema.Struct({
  kind: CallKind,
  ...Identity,
  /** The called target's model id. */
  model: Schema.String,
  /** `ok`: it answered; `error`: it failed (`error` says how; its cost is unknown). */
  outcome: Schema.Literal("ok", "error"),
  /** The error code of its failure (as a response's `error`); null when it answered. */
  error: Schema.NullOr(Schema.String),
  latency_ms: Schema.Number,
  ...Tokens
})
export type CallLine = typeof CallLine.Type

/** Any line of the routing log, by `kind`. */
export const Line = Schema.Union(ResponseLine, JudgeLine, CallLine)
export type Line = typeof Line.Type

/** One model's share of a session's calls (`SessionTotals.ModelStats`). */
export const ModelStats = SessionTotals.ModelStats
export type ModelStats = SessionTotals.ModelStats

/** The body of `GET /v1/session-stats` (`SessionTotals.SessionStats`). */
export const SessionStats = SessionTotals.SessionStats
export type SessionStats = SessionTotals.SessionStats

/** Records dropped because the queue was full. */
export const droppedTotal = Metric.counter("switchyard_routing_log_dropped_total", {
  incremental: true,
  description: "Routing log lines dropped because the write queue was full"
})

/** Records lost because opening or writing the file failed. */
export const writeErrorsTotal = Metric.counter("switchyard_routing_log_write_errors_total", {
  incremental: true,
  description: "Routing log lines lost to a failed open or write of the file"
})

/** The routing log of the server; {@link layerNoop} when `--routing-log-file` is absent. */
export class RoutingLog extends Context.Tag("@switchyard-ts/server/RoutingLog")<RoutingLog, {
  /** False for the no-op log: the request pipeline then builds no record at all. */
  readonly enabled: boolean
  /**
   * Add a line to the session aggregates and offer it to the write queue, at once (inside an
   * `Effect.sync`); a full queue drops it and counts it. Never blocks, never fails. `cost` is the
   * line's exact cost when the caller priced it (the aggregates then add it to the femto-dollar);
   * without it they read the line's `cost.usd` back (exact below 4 USD a call). `baseline` is a
   * response line's exact `baseline_cost` in the same way.
   */
  readonly unsafeAppend: (line: Line, cost?: Pricing.Cost, baseline?: Pricing.Cost) => void
  /**
   * The cost of one call of `model` reporting `usage`, by the pricing table in force
   * (`Pricing.Prices`; unknown without one).
   */
  readonly costOf: (model: string, usage: Usage | null | undefined) => Pricing.Cost | undefined
  /**
   * What an answer of `served` reporting `usage` (its own cost `answer`) would have cost at the
   * `baseline` model, by the same table (`Pricing.baselineCostOf`).
   */
  readonly baselineCostOf: (
    baseline: string,
    served: string,
    usage: Usage | null | undefined,
    answer: Pricing.Cost | undefined
  ) => Pricing.Cost | undefined
  /**
   * The totals of a session's lines (`SessionTotals`); none when no line names it (or it was
   * evicted or expired); fails when a shared store cannot be read.
   */
  readonly sessionStats: (
    sessionId: string
  ) => Effect.Effect<Option.Option<SessionStats>, SessionTotals.TotalsUnavailable>
}>() {}

/** Options of {@link layer}. */
export interface Options {
  /** The JSONL file, opened in append mode (its folder must exist). */
  readonly path: string
  /** Most lines queued for writing (default {@link defaultCapacity}); past it, lines are dropped. */
  readonly capacity?: number
  /**
   * Most sessions aggregated for session-stats in memory (default {@link defaultMaxSessions}); the
   * least recently updated go first. Unused when a `SessionTotals` is provided.
   */
  readonly maxSessions?: number
  /** The prices of the lines' costs (default: the provided `Pricing.Prices`, else none: every cost `null`). */
  readonly prices?: Pricing.Prices["Type"] | undefined
}

/** Default write-queue capacity, in lines. */
export const defaultCapacity = 10_000
/** Default number of sessions whose aggregates are kept in memory. */
export const defaultMaxSessions = SessionTotals.defaultMaxSessions
/** Most lines written in one append. */
const batchSize = 1_024
/** At most one WARN per this many ms for failed writes. */
const warnEveryMs = 60_000
/** How long shutdown waits for the queue to be written. */
const flushTimeout = "5 seconds"

/** The no-op routing log (no flag): nothing is built, queued or written. */
export const noop: RoutingLog["Type"] = RoutingLog.of({
  enabled: false,
  unsafeAppend: () => undefined,
  costOf: () => undefined,
  baselineCostOf: () => undefined,
  sessionStats: () => Effect.succeedNone
})

/** {@link noop} as a layer. */
export const layerNoop: Layer.Layer<RoutingLog> = Layer.succeed(RoutingLog, noop)

/** Opening or writing the file failed; `code` is Node's error code (`ENOENT`, `EISDIR`, …). */
class WriteFailed extends Data.TaggedError("WriteFailed")<{ readonly code: string }> {}

const codeOf = (cause: unknown): WriteFailed =>
  new WriteFailed({
    code: typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string"
      ? cause.code
      : "unknown"
  })

/**
 * The routing log writing to `options.path` (see the module documentation). Requires a `Scope`: the
 * writer fiber and the SIGHUP handler live in it; closing it writes what is queued (bounded by 5 s)
 * and closes the file. Opening is lazy: a path that cannot be opened fails writes, not start-up.
 */
export const make = (options: Options) =>
  Effect.gen(function*() {
    const queue = yield* Queue.dropping<Line>(options.capacity ?? defaultCapacity)
    const sessions = Option.getOrElse(
      yield* Effect.serviceOption(SessionTotals.SessionTotals),
      () => SessionTotals.makeMemory(options.maxSessions ?? defaultMaxSessions)
    )
    const prices = options.prices?.current ?? (yield* Pricing.currentTable)
    let file: FileHandle | undefined
    let reopen = false
    let lastWarnMs = Number.NEGATIVE_INFINITY

    const onHangup = () => {
      reopen = true
    }
    yield* Effect.acquireRelease(
      Effect.sync(() => process.on("SIGHUP", onHangup)),
      () => Effect.sync(() => process.off("SIGHUP", onHangup))
    )

    const close = Effect.suspend(() => {
      const closing = file
      file = undefined
      return closing === undefined ? Effect.void : Effect.promise(() => closing.close().catch(() => undefined))
    })

    const opened = Effect.suspend((): Effect.Effect<FileHandle, WriteFailed> => {
      const current = file
      if (current !== undefined) return Effect.succeed(current)
      return Effect.tryPromise({ try: () => open(options.path, "a"), catch: codeOf }).pipe(
        Effect.tap((handle) => Effect.sync(() => (file = handle)))
      )
    })

    const failed = (lines: number, error: WriteFailed) =>
      Effect.zipRight(
        Effect.sync(() => TaggedMetric.unsafeUpdate(writeErrorsTotal, {}, lines)),
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          if (now - lastWarnMs < warnEveryMs) return close
          lastWarnMs = now
          return Effect.zipRight(
            Effect.logWarning("routing log write failed").pipe(
              Effect.annotateLogs({ path: options.path, code: error.code, lines_lost: lines })
            ),
            close
          )
        })
      )

    /** Append one batch (reopening first after a SIGHUP); a failure loses the batch, counted. */
    const writeBatch = (lines: Chunk.Chunk<Line>) =>
      Effect.gen(function*() {
        if (reopen) {
          reopen = false
          yield* close
        }
        let text = ""
        for (const line of lines) text += `${JSON.stringify(line)}\n`
        const handle = yield* opened
        yield* Effect.tryPromise({ try: () => handle.appendFile(text), catch: codeOf })
      }).pipe(Effect.catchAll((error) => failed(lines.length, error)))

    // The write itself is never interrupted (a batch is written whole or counted as lost); only the wait is.
    const writer = yield* Effect.forkDaemon(Effect.forever(
      Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(restore(Queue.takeBetween(queue, 1, batchSize)), writeBatch)
      )
    ))

    yield* Effect.addFinalizer(() =>
      Fiber.interrupt(writer).pipe(
        Effect.zipRight(
          Effect.flatMap(Queue.takeAll(queue), (rest) => rest.length === 0 ? Effect.void : writeBatch(rest))
        ),
        Effect.timeoutOption(flushTimeout),
        Effect.zipRight(close)
      )
    )

    yield* Metric.update(droppedTotal, 0)
    yield* Metric.update(writeErrorsTotal, 0)

    return RoutingLog.of({
      enabled: true,
      unsafeAppend: (line, cost, baseline) => {
        sessions.add(line, cost, baseline)
        if (!queue.unsafeOffer(line)) TaggedMetric.unsafeUpdate(droppedTotal, {}, 1)
      },
      costOf: (model, usage) => Pricing.costOfUsage(prices(), model, usage),
      baselineCostOf: (baseline, served, usage, answer) =>
        Pricing.baselineCostOf(prices(), baseline, served, usage, answer),
      sessionStats: sessions.get
    })
  })

/** The routing log of `options` as a scoped layer (see {@link make}). */
export const layer = (options: Options): Layer.Layer<RoutingLog> => Layer.scoped(RoutingLog, make(options))
