/**
 * The `Judge` service: one consultation of a capability judge. It builds the judge request (the
 * packaged rubric or the route's prompt, the conversation view, structured output), calls the
 * judge target through `UpstreamClient` — one candidate, never a fallback — and decodes the verdict.
 *
 * Its failure channel is the judge posture's input — `TransportError | DeadlineExceeded |
 * UpstreamStatus` (the judge could not be consulted) or `InvalidVerdict` (it answered, unusably) —
 * plus `CircuitOpen` (the judge's LLM client's breaker refused the call; no HTTP request was made),
 * which the route settles around the posture (see `CapabilityRoute`).
 */
import type { Target } from "@switchyard-ts/client/Target"
import { UpstreamClient } from "@switchyard-ts/client/UpstreamClient"
import type { CircuitOpen, JudgeCallFailure } from "@switchyard-ts/protocol/Errors"
import type { ChatCompletion, Message } from "@switchyard-ts/protocol/OpenAiChat"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Conversation from "./Conversation.js"
import * as JudgePrompt from "./JudgePrompt.js"
import * as Metrics from "./Metrics.js"
import * as Verdict from "./Verdict.js"

/** How a route consults its judge (the route's classifier keys). */
export interface JudgeOptions {
  /** The judge target (`classifier_target`). */
  readonly judge: Target
  /** Replaces the packaged rubric when set. */
  readonly prompt: Option.Option<string>
  readonly responseFormatType: "json_schema" | "json_object"
  /** Sent as `max_completion_tokens`. */
  readonly maxOutputTokens: number
  readonly recentTurnWindow: Option.Option<number>
  /**
   * `judge_timeout_ms`: a deadline of the consultation, retries included, applied together with the
   * judge client's `timeout_ms` (the tighter wins); its expiry is a `DeadlineExceeded`. None (or
   * absent): the client's `timeout_ms` alone.
   */
  readonly judgeTimeoutMs?: Option.Option<number>
}

/** One consultation: the route's options and the caller's conversation and headers. */
export interface Consultation {
  readonly options: JudgeOptions
  readonly messages: ReadonlyArray<Message>
  /** Caller headers; the upstream client drops credentials and hop-by-hop headers. */
  readonly headers: Readonly<Record<string, string>>
}

/** Everything a consultation can fail with. */
export type JudgeError = JudgeCallFailure | Verdict.InvalidVerdict | CircuitOpen

/** The judge port; replace it with `layerTest` to script verdicts and failures. */
export class Judge extends Context.Tag("@switchyard-ts/routing/Judge")<Judge, {
  readonly consult: (consultation: Consultation) => Effect.Effect<Verdict.Verdict, JudgeError>
}>() {}

/** The judge's system prompt for these options. */
export const systemPrompt = (options: JudgeOptions): string => {
  const prompt = Option.getOrElse(options.prompt, () => JudgePrompt.capabilityRubric)
  return options.responseFormatType === "json_object"
    ? `${prompt}\n\n${JudgePrompt.jsonObjectInstruction}\n${JSON.stringify(Verdict.jsonSchema, null, 2)}`
    : prompt
}

/** The chat request sent to the judge: no tools, no sampling fields, non-streaming. */
export const requestBody = (consultation: Consultation): Readonly<Record<string, unknown>> => ({
  model: consultation.options.judge.id,
  messages: [
    { role: "system", content: systemPrompt(consultation.options) },
    { role: "user", content: Conversation.judgeView(consultation.messages, consultation.options.recentTurnWindow) }
  ],
  response_format: consultation.options.responseFormatType === "json_object"
    ? { type: "json_object" }
    : Verdict.responseFormatJsonSchema,
  max_completion_tokens: consultation.options.maxOutputTokens
})

/** The verdict in a judge's completion: the first choice's text; a truncated reply is unusable. */
export const verdictOf = (completion: ChatCompletion): Effect.Effect<Verdict.Verdict, Verdict.InvalidVerdict> => {
  const choice = completion.choices[0]
  if (choice?.finish_reason === "length") {
    return Effect.fail(
      new Verdict.InvalidVerdict({ reason: "parse_error", detail: "reply truncated by max_output_tokens" })
    )
  }
  return Verdict.decode(choice?.message.content ?? "")
}

/**
 * Record one judge call in `switchyard_llm_calls_total` / `switchyard_llm_call_duration_ms`
 * (`selected_model` = the judge's model id). A call that returned a completion is `ok`, even when
 * its verdict then proves unusable.
 */
const recordJudgeCall = (judgeModel: string, outcome: "ok" | "error", durationMs: number) =>
  Metrics.recordLlmCall("llm_task_classifier", judgeModel, outcome, durationMs)

const refusedByBreaker = (exit: Exit.Exit<unknown, { readonly _tag: string }>): boolean =>
  Exit.isFailure(exit) && Option.exists(Cause.failureOption(exit.cause), (error) => error._tag === "CircuitOpen")

/**
 * The judge over the `UpstreamClient`: one call to the judge target, bounded by the route's
 * `judgeTimeoutMs` as well as the client's `timeout_ms`. A call refused by the client's open
 * breaker made no HTTP request and is not recorded in the call metrics.
 */
export const make: Effect.Effect<Judge["Type"], never, UpstreamClient> = Effect.map(
  UpstreamClient,
  (upstream) =>
    Judge.of({
      consult: (consultation) =>
        Effect.flatMap(Clock.currentTimeMillis, (start) =>
          upstream.complete({
            target: consultation.options.judge,
            body: requestBody(consultation),
            headers: consultation.headers,
            timeoutMs: consultation.options.judgeTimeoutMs ?? Option.none()
          }).pipe(
            Effect.onExit((exit) =>
              refusedByBreaker(exit) ?
                Effect.void :
                Effect.flatMap(
                  Clock.currentTimeMillis,
                  (end) =>
                    recordJudgeCall(consultation.options.judge.id, Exit.isSuccess(exit) ? "ok" : "error", end - start)
                )
            )
          )).pipe(
            Effect.catchTag("InvalidResponse", () =>
              Effect.fail(
                new Verdict.InvalidVerdict({
                  reason: "invalid_response",
                  detail: "judge body is not a chat completion"
                })
              )),
            // The judge request is text only, so every format can carry it; kept total all the same.
            Effect.catchTag("TranslationError", () =>
              Effect.fail(
                new Verdict.InvalidVerdict({
                  reason: "invalid_response",
                  detail: "judge request cannot be sent in its upstream's format"
                })
              )),
            Effect.flatMap(verdictOf),
            Effect.withSpan("Judge.consult", {
              captureStackTrace: false,
              attributes: { "switchyard.judge_model": consultation.options.judge.id }
            })
          )
    })
)

/** The judge layer over the `UpstreamClient`. */
export const layer: Layer.Layer<Judge, never, UpstreamClient> = Layer.effect(Judge, make)

/** A scripted judge: `consult` answers whatever the function returns (e.g. from a `Ref` of outcomes). */
export const layerTest = (
  consult: (consultation: Consultation) => Effect.Effect<Verdict.Verdict, JudgeError>
): Layer.Layer<Judge> => Layer.succeed(Judge, Judge.of({ consult }))
