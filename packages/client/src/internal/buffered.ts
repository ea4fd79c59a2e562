/**
 * Buffered replies: a 2xx body decoded into an answer by the target's format record
 * (`UpstreamFormat.readAnswer`: a chat completion, or an answer of the format translated into one
 * and, on a native replay, kept as sent), or read as any JSON value (token counting); and the
 * `gen_ai.response.*` span attributes.
 *
 * @internal
 */
import type { UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import * as Nesting from "@switchyard-ts/protocol/Nesting"
import type { ChatCompletion } from "@switchyard-ts/protocol/OpenAiChat"
import * as Effect from "effect/Effect"
import * as Spans from "../Spans.js"
import type { Answer } from "../UpstreamClient.js"
import type { CallContext } from "./call.js"
import type * as Exchange from "./exchange.js"
import * as Failure from "./failure.js"
import * as Formats from "./formats.js"

/** The body of a buffered reply (a streamed one never reaches a buffered call). */
const bodyOf = <S>(reply: Exchange.Reply<S>): string => (reply._tag === "Body" ? reply.body : "")

/**
 * Decodes a buffered 2xx body by the target's format (`created`, when the answer has none, is the
 * time now; the format's own body kept on a native replay) — an answer translated for a caller of
 * another format with its tool-call arguments held to the nesting bound — annotating the call's
 * span with {@link responseAttributes}.
 */
export const readAnswer = <S>(reply: Exchange.Reply<S>, ctx: CallContext): Effect.Effect<Answer, UpstreamFailure> => {
  const answered = Formats.of(ctx.target.client.format).readAnswer(bodyOf(reply), ctx)
  const checked = ctx.translatedAnswer
    ? Effect.flatMap(answered, (answer) => heldArguments(answer, ctx.target.id))
    : answered
  return Spans.annotateOutcome<Answer, UpstreamFailure>(({ completion }) => responseAttributes(completion))(checked)
}

/** The answer, when its tool-call arguments nest within the bound (`Nesting.completionArguments`). */
const heldArguments = (answer: Answer, target: string): Effect.Effect<Answer, UpstreamFailure> => {
  const path = Nesting.completionArguments(answer.completion)
  return path === undefined ? Effect.succeed(answer) : Effect.fail(Failure.deepArguments(target, `answer ${path}`))
}

/** Reads a buffered 2xx body as any JSON value. */
export const readJson = <S>(reply: Exchange.Reply<S>, ctx: CallContext): Effect.Effect<unknown, UpstreamFailure> =>
  Failure.jsonOrInvalid(ctx.target.id, "response body", bodyOf(reply))

/** `gen_ai.response.*` and `gen_ai.usage.*` span attributes of a completion (no content). */
export const responseAttributes = (
  completion: ChatCompletion
): Record<string, string | number | ReadonlyArray<string>> => {
  const usage = completion.usage
  const details = usage?.prompt_tokens_details
  const reasoning = usage?.completion_tokens_details?.reasoning_tokens
  return {
    "gen_ai.response.id": completion.id,
    "gen_ai.response.model": completion.model,
    "gen_ai.response.finish_reasons": completion.choices.map((choice) => choice.finish_reason ?? "null"),
    ...(usage === null || usage === undefined ? {} : {
      "gen_ai.usage.input_tokens": usage.prompt_tokens,
      "gen_ai.usage.output_tokens": usage.completion_tokens,
      ...(typeof details?.cached_tokens === "number"
        ? { "gen_ai.usage.cache_read.input_tokens": details.cached_tokens }
        : {}),
      ...(typeof details?.cache_creation_tokens === "number"
        ? { "gen_ai.usage.cache_creation.input_tokens": details.cache_creation_tokens }
        : {}),
      ...(typeof reasoning === "number" ? { "gen_ai.usage.reasoning.output_tokens": reasoning } : {})
    })
  }
}
