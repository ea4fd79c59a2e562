/**
 * The routing log lines of one request (see `RoutingLog`): a {@link Tally} made when its body is
 * decoded collects what routing reports (judge calls, classifier facts) and what its answer carried
 * (usage, how its stream ended); its judge lines are appended as the calls end, its response line
 * once the answer was written. A late call (`late_verdict_ms`) is the request's judge fact at the
 * deadline (`timeout`, `late` `continues` / `dropped`) and has its judge line when it settles (or at
 * once when dropped), marked with what it came to. Made only when the log is on.
 *
 * @internal
 */
import { clip } from "@switchyard-ts/protocol/Excerpt"
import { tokenCounts, type Usage } from "@switchyard-ts/protocol/OpenAiChat"
import * as Decision from "@switchyard-ts/routing/Decision"
import * as Pricing from "@switchyard-ts/routing/Pricing"
import * as RoutingFacts from "@switchyard-ts/routing/RoutingFacts"
import * as RoutingRecord from "@switchyard-ts/routing/RoutingRecord"
import * as SessionIdentity from "@switchyard-ts/routing/SessionIdentity"
import * as Option from "effect/Option"
import type * as RoutingLog from "../RoutingLog.js"

/** Longest id kept in a line; longer ones are clipped. */
const maxIdLength = 128

type Tokens = Pick<
  RoutingLog.JudgeLine,
  | "prompt_tokens"
  | "cached_tokens"
  | "cache_creation_tokens"
  | "completion_tokens"
  | "reasoning_tokens"
  | "total_tokens"
  | "cost"
>

type Identity = Pick<
  RoutingLog.JudgeLine,
  "task" | "trial_id" | "session_id" | "agent_id" | "request_id" | "route" | "route_id" | "origin"
>

/** The token fields of a line: those of the usage reported (all 0 without one), and its `cost`. */
const tokensOf = (usage: Usage | null | undefined, cost: Pricing.Cost | undefined): Tokens => {
  const tokens = usage === null || usage === undefined ? undefined : tokenCounts(usage)
  const prompt = tokens?.prompt ?? 0
  const completion = tokens?.completion ?? 0
  return {
    prompt_tokens: prompt,
    cached_tokens: tokens?.cached ?? 0,
    cache_creation_tokens: tokens?.cacheCreation ?? 0,
    completion_tokens: completion,
    reasoning_tokens: tokens?.reasoning ?? 0,
    total_tokens: prompt + completion,
    cost: Pricing.callCost(cost)
  }
}

const firstOf = (headers: Readonly<Record<string, string>>, names: ReadonlyArray<string>): string | null => {
  for (const name of names) {
    const value = (headers[name] ?? "").trim()
    if (value !== "") return clip(value, maxIdLength)
  }
  return null
}

/** A header value that is text: visible ASCII, spaces and tabs only (what an HTTP header can carry as text). */
const isText = (value: string): boolean => /^[\t\x20-\x7e]*$/.test(value)

/**
 * `x-switchyard-origin`, trimmed and clipped; `null` when it is absent, empty or blank, or not text
 * (a byte outside visible ASCII): as the compatible system writes it, never omitted.
 */
const originOf = (headers: Readonly<Record<string, string>>): string | null => {
  const value = (headers["x-switchyard-origin"] ?? "").trim()
  return value === "" || !isText(value) ? null : clip(value, maxIdLength)
}

const idOf = (id: Option.Option<string>): string | null =>
  Option.match(id, { onNone: () => null, onSome: (value) => clip(value, maxIdLength) })

/** The ids of a request's headers: never any other header value. */
const identityOf = (headers: Readonly<Record<string, string>>, route: string): Identity => ({
  task: firstOf(headers, ["x-switchyard-intake-task"]),
  trial_id: firstOf(headers, ["x-switchyard-trial-id"]),
  session_id: idOf(SessionIdentity.sessionIdOf(headers)) ?? firstOf(headers, ["proxy_x_session_id"]),
  agent_id: idOf(SessionIdentity.agentIdOf(headers)),
  request_id: firstOf(headers, ["x-switchyard-request-id", "x-request-id", "x-client-request-id"]),
  route: clip(route, maxIdLength),
  route_id: clip(route, maxIdLength),
  origin: originOf(headers)
})

const isoOf = (epochMs: number): string => new Date(epochMs).toISOString()

/** One request's routing-log state. */
export interface Tally {
  /** Hand to the `Router` with the request (its routing reports to it). */
  readonly observer: RoutingFacts.Observer
  /**
   * Where the answer's usage is read when the response line is made: a stream's `Streamed.usage`
   * (the usage its pieces carried so far, as the router counts it), a buffered answer's own.
   */
  readonly answered: (usage: () => Usage | null | undefined) => void
  /** The stream was written to its end. */
  readonly ended: () => void
  /** The stream failed after its headers. */
  readonly failed: () => void
  /** Append the response line (once the answer was written). */
  readonly respond: (response: Response) => void
}

/** What the response line says of the answer. */
export interface Response {
  readonly decision: Option.Option<Decision.Decision>
  /** The model that served it ("" when none). */
  readonly model: string
  readonly wireFormat: string
  readonly streaming: boolean
  readonly status: number
  /** The error code of an error answer. */
  readonly error: string
  readonly latencyMs: number
  readonly endedAtMs: number
  /** The model the answer is measured against (`Route.baseline`, else the served model); null without a decision. */
  readonly baselineModel: string | null
}

/** What a request's routing and answer reported so far, for its response line. */
interface Collected {
  /** Where the answer's usage is read (see {@link Tally.answered}). */
  usageOf: () => Usage | null | undefined
  /** The request's judge fact: its last judge call not settled late. */
  judge: RoutingLog.ResponseLine["judge"]
  /** What the route type told of the request (`RoutingFacts.RouteFacts`). */
  reported: RoutingRecord.Reported
  /** The calls made while routing, but the judge's (those have lines of their own at once). */
  calls: Array<RoutingFacts.RoutingCall>
  streamEnded: boolean
  streamFailed: boolean
}

/** No usage reported (yet). */
const noUsage = (): Usage | null | undefined => undefined

/**
 * The tally of a request to `route` with `headers`, appending to `log`; `userTurn`: its last
 * non-instruction message is the user's (what `classify_trigger = "user_turn"` consults on).
 */
export const start = (
  log: RoutingLog.RoutingLog["Type"],
  headers: Readonly<Record<string, string>>,
  route: string,
  userTurn: boolean
): Tally => {
  const identity = identityOf(headers, route)
  const collected: Collected = {
    usageOf: noUsage,
    judge: null,
    reported: {},
    calls: [],
    streamEnded: false,
    streamFailed: false
  }
  return {
    observer: {
      judgeCall: (call) => judgeCall(log, identity, collected, call),
      routed: (facts) => {
        collected.reported = RoutingRecord.withFacts(collected.reported, facts)
      },
      routingCall: (call) => {
        if (call.kind !== "judge") collected.calls.push(call)
      }
    },
    answered: (usage) => {
      collected.usageOf = usage
    },
    ended: () => {
      collected.streamEnded = true
    },
    failed: () => {
      collected.streamFailed = true
    },
    respond: (response) => respond(log, identity, userTurn, collected, response)
  }
}

/**
 * A judge call ended: it is the request's judge fact unless it settled late, and has its judge
 * line unless it continues past the deadline (its line comes when it settles).
 */
const judgeCall = (
  log: RoutingLog.RoutingLog["Type"],
  identity: Identity,
  collected: Collected,
  call: RoutingFacts.JudgeCall
): void => {
  const atDeadline = call.late === "continues" || call.late === "dropped" ? call.late : undefined
  // A late call's record when it settles is a line of its own: the request was answered without it.
  if (call.late === undefined || atDeadline !== undefined) {
    collected.judge = {
      model: call.judgeModel,
      outcome: call.outcome,
      latency_ms: call.latencyMs,
      ...(atDeadline === undefined ? {} : { late: atDeadline })
    }
  }
  if (call.late === "continues") return
  const usage = Option.getOrUndefined(call.usage)
  const cost = log.costOf(call.judgeModel, usage)
  log.unsafeAppend({
    kind: "judge",
    ts: isoOf(call.endedAtMs),
    ...identity,
    model: call.judgeModel,
    tier: "classifier",
    outcome: call.outcome,
    latency_ms: call.latencyMs,
    ...(call.late === undefined ? {} : { late: call.late }),
    ...(call.verdict === undefined ? {} : { evidence: call.verdict }),
    ...tokensOf(usage, cost)
  }, cost)
}

/**
 * The line of a call made while routing that did not become the request's answer (a review, a
 * discarded or failed turn), priced by its usage (unknown when it failed).
 */
const callLine = (log: RoutingLog.RoutingLog["Type"], identity: Identity, call: RoutingFacts.RoutingCall): void => {
  if (call.kind === "judge") return
  const cost = call.ok ? log.costOf(call.model, call.usage) : undefined
  log.unsafeAppend({
    kind: call.kind,
    ts: isoOf(call.endedAtMs),
    ...identity,
    model: call.model,
    outcome: call.ok ? "ok" : "error",
    error: call.ok ? null : call.error ?? null,
    latency_ms: call.latencyMs,
    ...tokensOf(call.usage, cost)
  }, cost)
}

/** How the answer ended: an error status, a whole answer, a stream failed after its headers, or one cut short. */
const outcomeOf = (response: Response, collected: Collected): RoutingLog.ResponseOutcome =>
  response.status >= 300
    ? "error"
    : !response.streaming || collected.streamEnded
    ? "ok"
    : collected.streamFailed
    ? "stream_error"
    : "incomplete"

/** Appends the response line, priced by the usage the answer reported. */
const respond = (
  log: RoutingLog.RoutingLog["Type"],
  identity: Identity,
  userTurn: boolean,
  collected: Collected,
  response: Response
): void => {
  const usage = collected.usageOf()
  // an answer the caller did not get whole (an error, a failed or abandoned stream) is priced
  // only by the usage it reported before it ended, if any
  const cost = response.model === "" ? undefined : log.costOf(response.model, usage)
  const baseline = response.model === "" || response.baselineModel === null
    ? undefined
    : log.baselineCostOf(response.baselineModel, response.model, usage, cost)
  const decided = RoutingRecord.decidedOf(response.decision, collected.reported)
  const answer = Option.getOrUndefined(Option.flatMap(response.decision, Decision.answerOf))
  for (const call of collected.calls) {
    if (!RoutingFacts.isAnswer(call, answer)) callLine(log, identity, call)
  }
  log.unsafeAppend(
    {
      kind: "response",
      ts: isoOf(response.endedAtMs),
      ...identity,
      algorithm: decided.algorithm,
      model: response.model,
      selected_model: decided.selected_model,
      tier: decided.tier,
      wire_format: response.wireFormat,
      streaming: response.streaming,
      user_turn: userTurn,
      status: response.status,
      outcome: outcomeOf(response, collected),
      error: response.error === "" ? null : response.error,
      evidence: decided.evidence,
      posture: decided.posture,
      trigger: decided.trigger,
      judge: collected.judge,
      stored_before: decided.stored_before,
      stored_after: decided.stored_after,
      ...(decided.stage === undefined ? {} : { stage: decided.stage }),
      ...(decided.advisor === undefined ? {} : { advisor: decided.advisor }),
      latency_ms: response.latencyMs,
      ...tokensOf(usage, cost),
      baseline_model: response.baselineModel,
      baseline_cost: Pricing.callCost(baseline)
    },
    cost,
    baseline
  )
}
