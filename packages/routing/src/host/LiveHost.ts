/**
 * The live host of a route program (`RouteHost`): its judges are the `Judge` service (the advisor:
 * a call of the `UpstreamClient`), its routing-time calls go to the `UpstreamClient`, its session
 * state is the `SessionStore` and its own state lives in this process; the request's signals are
 * read off its messages, and telemetry is recorded.
 *
 * One host serves one route, for as long as the route is built. It owns the route's per-key locks
 * and, when the route's classifier has late verdicts (`late_verdict_ms`), their bounded background:
 * a capability or custom consultation of a request with a session key that misses
 * `judge_timeout_ms` fails with `DeadlineExceeded` at the deadline, goes on in the background, and
 * its valid verdict is stored for the key (marked `late`) unless a newer decision was stored for it
 * meanwhile (`superseded`); see `LateVerdict`.
 */
import * as Spans from "@switchyard-ts/client/Spans"
import { UpstreamClient } from "@switchyard-ts/client/UpstreamClient"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type * as Decision from "../Decision.js"
import type { JudgeError } from "../judge/Consultation.js"
import * as JsonPointer from "../judge/JsonPointer.js"
import { Judge } from "../judge/Judge.js"
import * as JudgeChain from "../judge/JudgeChain.js"
import * as LateVerdict from "../judge/LateVerdict.js"
import type * as Posture from "../judge/Posture.js"
import { invalid } from "../judge/Verdict.js"
import * as Metrics from "../Metrics.js"
import type { Route } from "../Route.js"
import * as AdvisorReview from "../routes/advisor/AdvisorReview.js"
import * as StageSignals from "../routes/stage/StageSignals.js"
import * as Conversation from "../sessions/Conversation.js"
import { type SessionDecision, SessionStore } from "../sessions/SessionStore.js"
import * as RouteHost from "./RouteHost.js"
import type * as RoutingFacts from "./RoutingFacts.js"

/** What a route's live host is built with. */
export interface Options {
  /** The route's algorithm: the label of its routing-time calls' metrics. */
  readonly algorithm: Decision.Algorithm
  /** The late verdicts of the route's classifier (`LateVerdict.settings`), and its judge model; none when off. */
  readonly late: Option.Option<{ readonly settings: LateVerdict.Settings; readonly judgeModel: string }>
  /** The route's id: the `route` label of its judge chain's counters (as the route cost counters'). */
  readonly route: string
}

/**
 * Per-key locks: requests of one key run one at a time (judge call included), so a second request
 * sees the first one's stored state instead of consulting the judge again. No key: no lock. A key's
 * lock lives while requests use it.
 */
export const locks = () => {
  const held = new Map<string, { readonly semaphore: Effect.Semaphore; users: number }>()
  return (key: Option.Option<string>) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
    if (Option.isNone(key)) return effect
    return Effect.acquireUseRelease(
      Effect.sync(() => {
        const lock = held.get(key.value) ?? { semaphore: Effect.unsafeMakeSemaphore(1), users: 0 }
        lock.users++
        held.set(key.value, lock)
        return lock
      }),
      (lock) => lock.semaphore.withPermits(1)(effect),
      (lock) =>
        Effect.sync(() => {
          lock.users--
          if (lock.users === 0) held.delete(key.value)
        })
    )
  }
}

/** An in-process store of at most `bound` keys; reading or writing a key makes it the most recent. */
export const boundedStore = <S>(bound: number): RouteHost.Store<S> => {
  const entries = new Map<string, S>()
  const touch = (key: string, value: S) => {
    entries.delete(key)
    entries.set(key, value)
    while (entries.size > bound) {
      const oldest = entries.keys().next()
      if (oldest.done === true) break
      entries.delete(oldest.value)
    }
  }
  const read = (key: string): Option.Option<S> => {
    const value = entries.get(key)
    if (value === undefined) return Option.none()
    touch(key, value)
    return Option.some(value)
  }
  return {
    get: (key) => Effect.sync(() => read(key)),
    put: (key, value) => Effect.sync(() => touch(key, value)),
    remove: (key) => Effect.sync(() => void entries.delete(key)),
    modify: (key, f) =>
      Effect.sync(() => {
        const [result, next] = f(read(key))
        if (Option.isSome(next)) touch(key, next.value)
        else entries.delete(key)
        return result
      })
  }
}

/** The advisor's verdict on a turn, its unusable replies as `InvalidVerdict`s (folded by the posture). */
const askAdvisor = (
  upstream: UpstreamClient["Type"],
  algorithm: Decision.Algorithm,
  question: RouteHost.Question<"Advisor">
): Effect.Effect<AdvisorReview.Verdict, JudgeError, RoutingFacts.Reporter> => {
  const { options, request, trigger, turn } = question
  return Metrics.countedCall(
    algorithm,
    "advisor_review",
    options.advisor.id,
    upstream.complete({
      target: options.advisor,
      body: AdvisorReview.requestBody(options, request.body.messages, turn),
      headers: request.headers
    })
  ).pipe(
    Effect.catchTag(
      "InvalidResponse",
      () => Effect.fail(invalid("invalid_response", "advisor body is not a chat completion"))
    ),
    Effect.catchTag(
      "TranslationError",
      () => Effect.fail(invalid("invalid_response", "advisor request cannot be sent in its upstream's format"))
    ),
    Effect.flatMap((completion) =>
      Option.match(AdvisorReview.parseVerdict(completion.choices[0]?.message.content ?? ""), {
        onNone: () => Effect.fail(invalid("parse_error", "advisor reply has no APPROVE or REDO")),
        onSome: Effect.succeed
      })
    ),
    Spans.withSpan("Advisor.consult", () => ({
      captureStackTrace: false,
      attributes: { "switchyard.advisor_model": options.advisor.id, "switchyard.trigger": trigger }
    }))
  )
}

/**
 * The late verdicts of one host: its runner (when on), and the keys with calls of late-verdict
 * requests not finished yet — how many, and the sequence number of the newest decision stored for
 * the key since (-1: none). Sequence numbers are given to capability and custom consultations in
 * the order they start; a decision the route stores takes the next number, a late verdict its own
 * request's: a late verdict older than the newest decision stored for its key is `superseded`.
 */
const lateVerdicts = (options: Options, store: SessionStore["Type"], exclusive: ReturnType<typeof locks>) =>
  Effect.gen(function*() {
    const runner = Option.isSome(options.late)
      ? Option.some(yield* LateVerdict.make(options.late.value.settings, options.late.value.judgeModel))
      : Option.none()
    const pending = new Map<string, { calls: number; newest: number }>()
    let sequence = 0

    const storedNow = (key: string, seq: number) => {
      const entry = pending.get(key)
      if (entry !== undefined) entry.newest = Math.max(entry.newest, seq)
    }

    const track = (key: string) =>
      Effect.sync(() => {
        const entry = pending.get(key) ?? { calls: 0, newest: -1 }
        entry.calls++
        pending.set(key, entry)
        return Effect.sync(() => {
          entry.calls--
          if (entry.calls === 0) pending.delete(key)
        })
      })

    /** A valid late verdict of request `seq`: stored for its key unless a newer decision was. */
    const storeLate = <A>(late: RouteHost.LateStore<A>, seq: number, answer: A) =>
      Effect.suspend((): Effect.Effect<LateVerdict.Settled> => {
        const settled = (outcome: LateVerdict.Outcome): LateVerdict.Settled => ({
          outcome,
          verdict: Option.some(late.evidence(answer))
        })
        if ((pending.get(late.key)?.newest ?? -1) > seq) return Effect.succeed(settled("superseded"))
        return store.put(late.key, { ...late.store(answer), late: true }).pipe(
          Effect.zipRight(Effect.sync(() => storedNow(late.key, seq))),
          Effect.as(settled("stored"))
        )
      })

    const settleLate = <A>(late: RouteHost.LateStore<A>, seq: number) => (exit: Exit.Exit<A, JudgeError>) =>
      Exit.match(exit, {
        onFailure: (cause) =>
          Effect.succeed<LateVerdict.Settled>({
            outcome: Option.exists(Cause.failureOption(cause), (error) => error._tag === "InvalidVerdict")
              ? "invalid"
              : "failed",
            verdict: Option.none()
          }),
        onSuccess: (answer) => exclusive(Option.some(late.key))(storeLate(late, seq, answer))
      })

    /**
     * A classifier consultation: `call(timeout)` asks the judge with this deadline (the route's own,
     * or with late verdicts `judge_timeout_ms + late_verdict_ms`), waited for until
     * `judge_timeout_ms` when the question has a key to store a late verdict for.
     */
    const consult = <A>(
      late: Option.Option<RouteHost.LateStore<A>>,
      call: (
        judgeTimeoutMs: Option.Option<Option.Option<number>>
      ) => Effect.Effect<A, JudgeError, RoutingFacts.Reporter>
    ): Effect.Effect<A, JudgeError, RoutingFacts.Reporter> =>
      Effect.suspend(() => {
        const seq = sequence++
        if (Option.isNone(runner) || Option.isNone(late)) return call(Option.none())
        const { deadlineMs, lateMs } = runner.value.settings
        return runner.value.run(
          call(Option.some(Option.some(deadlineMs + lateMs))),
          settleLate(late.value, seq),
          track(late.value.key)
        )
      })

    /** A decision the route stored for `key` now: newer than every late verdict pending for it. */
    const stored = (key: string) => Effect.sync(() => storedNow(key, sequence))

    return { consult, stored }
  })

/** A question's judge options with a deadline replaced (none: as configured). */
const withTimeout = <O extends { readonly judgeTimeoutMs?: Option.Option<number> }>(
  options: O,
  judgeTimeoutMs: Option.Option<Option.Option<number>>
): O =>
  Option.match(judgeTimeoutMs, {
    onNone: () => options,
    onSome: (timeout) => ({ ...options, judgeTimeoutMs: timeout })
  })

/** The signals of a live request: read off its messages and headers. */
const signals: RouteHost.Signals = {
  userTurn: (request) => Conversation.isUserTurn(request.body.messages),
  messageHash: (request) => Conversation.messageHash(request.body.messages),
  stage: (request, window, semantics) =>
    Effect.sync(() => {
      const read = StageSignals.signalsOf(request.body.messages, window, semantics)
      return { reading: StageSignals.readingOf(read), dimensions: StageSignals.dimensionsOf(read) }
    }),
  trigger: (request, turn, rules, unreviewed) =>
    Effect.flatMap(
      rules.gateStallTurns > 0 ? Conversation.messageHash(request.body.messages) : Effect.succeedNone,
      (conversation) =>
        Effect.map(
          Option.match(conversation, { onNone: () => Effect.succeed(false), onSome: unreviewed }),
          (unreviewedStall) => ({
            trigger: AdvisorReview.triggerOf(rules, request.body.messages, turn, unreviewedStall),
            conversation
          })
        )
    )
}

/** The live host of one route (see the module doc); late verdicts' background calls run in `Scope`. */
export const make = (
  options: Options
): Effect.Effect<RouteHost.Host, never, Judge | SessionStore | UpstreamClient | Scope.Scope> =>
  Effect.gen(function*() {
    const judge = yield* Judge
    const sessionStore = yield* SessionStore
    const upstream = yield* UpstreamClient
    const exclusive = locks()
    const late = yield* lateVerdicts(options, sessionStore, exclusive)
    // A route with late verdicts has one judge (a chain cannot be waited for in the background).
    const withLate = Option.isSome(options.late)
    /** A question's judges asked as its route's chain (`JudgeChain`): each asked with its options' judge replaced. */
    const chained = <O extends JudgeChain.ChainOptions, A, E extends JudgeError>(
      judgeOptions: O,
      ask: (options: O) => Effect.Effect<A, E, RoutingFacts.Reporter>
    ) =>
      JudgeChain.run(
        JudgeChain.settingsOf(judgeOptions, options.route),
        (target, timeoutMs) => ask({ ...judgeOptions, judge: target, judgeTimeoutMs: timeoutMs })
      )
    const consultants: RouteHost.Consultants = {
      Capability: (question) => {
        const ask = (options: typeof question.options) =>
          judge.consult({ options, messages: question.request.body.messages, headers: question.request.headers })
        return withLate
          ? JudgeChain.one(
            question.options.judge.id,
            late.consult(question.late, (timeout) => ask(withTimeout(question.options, timeout)))
          )
          : chained(question.options, ask)
      },
      Custom: (question) => {
        const ask = (options: typeof question.options) =>
          Effect.map(
            judge.classify({ options, messages: question.request.body.messages, headers: question.request.headers }),
            (verdict) =>
              JsonPointer.resolve(question.selector, verdict).pipe(Option.filter((v) => typeof v === "string"))
          )
        return withLate
          ? JudgeChain.one(
            question.options.judge.id,
            late.consult(question.late, (timeout) => ask(withTimeout(question.options, timeout)))
          )
          : chained(question.options, ask)
      },
      Escalation: (question) =>
        chained(question.options, (asked) =>
          Effect.map(
            judge.escalate({
              options: asked,
              messages: question.request.body.messages,
              reply: question.reply,
              headers: question.request.headers,
              ...Option.match(question.phase, { onNone: () => ({}), onSome: (phase) => ({ phase }) })
            }),
            (verdict): RouteHost.Vote => ({
              escalate: verdict.escalate,
              ...(verdict.category === undefined ? {} : { category: verdict.category }),
              ...(verdict.new_evidence === undefined ? {} : { new_evidence: verdict.new_evidence })
            })
          )),
      Advisor: (question) =>
        JudgeChain.one(question.options.advisor.id, askAdvisor(upstream, options.algorithm, question))
    }
    const parts: Pick<RouteHost.Store<SessionDecision>, "get" | "put" | "remove"> = {
      get: sessionStore.get,
      put: (key, value) => Effect.zipRight(sessionStore.put(key, value), late.stored(key)),
      remove: sessionStore.remove
    }
    const sessions: RouteHost.Store<SessionDecision> = { ...parts, modify: RouteHost.modifyByParts(parts) }
    const opener: RouteHost.StoreOpener = {
      sessions,
      local: boundedStore,
      view: (store) => store
    }
    const call = (modelCall: RouteHost.ModelCall) =>
      Metrics.countedCall(
        options.algorithm,
        modelCall.kind,
        modelCall.target.id,
        upstream.complete({
          target: modelCall.target,
          body: modelCall.body,
          headers: modelCall.headers,
          completion: true
        })
      )
    return {
      consult: (question) => RouteHost.dispatch(consultants, question),
      call,
      store: (space) => space.open(opener),
      exclusive,
      signals,
      record: (telemetry) => telemetry
    }
  })

/** The services a live host is built over. */
export type Services = Judge | SessionStore | UpstreamClient | Scope.Scope

/** The late verdicts of a classifier with these keys under `posture` (`LateVerdict.settings`), for {@link Options}. */
export const lateOf = (
  options: LateVerdict.Options,
  posture: Posture.Posture,
  judgeModel: string
): Options["late"] => Option.map(LateVerdict.settings(options, posture), (settings) => ({ settings, judgeModel }))

/** `program`'s decisions served by `host`: a route's `decide`. */
export const serve = (host: RouteHost.Host, program: RouteHost.Program): Route["decide"] => (request) =>
  Effect.provideService(program(request), RouteHost.RouteHost, host)

/** A route (`fields`) whose decisions are `program` run on a live host built with `options`. */
export const route = (
  options: Omit<Options, "route">,
  fields: Omit<Route, "decide">,
  program: RouteHost.Program
): Effect.Effect<Route, never, Services> =>
  Effect.map(make({ ...options, route: fields.id }), (host): Route => ({ ...fields, decide: serve(host, program) }))
