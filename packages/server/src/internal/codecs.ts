/**
 * One codec per inbound wire format: how a request body of that format becomes the routed request
 * routing works on, and how an answer (buffered or streamed), a failure, and a route's own answer
 * are written back in that format. The request pipeline (`pipeline.ts`) is the same for every
 * format; adding a format is adding a codec.
 *
 * @internal
 */
import * as Relay from "@switchyard-ts/client/Relay"
import type { Format, NativeBody, Target } from "@switchyard-ts/client/Target"
import * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import * as AnthropicMessages from "@switchyard-ts/protocol/AnthropicMessages"
import { type RequestFailure, toEnvelope, toHttp, type UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import type { InvalidRequest, ResponseStateConflict, TranslationError } from "@switchyard-ts/protocol/Errors"
import type { WireFormat } from "@switchyard-ts/protocol/Neutral"
import {
  type ChatCompletion,
  type ChatCompletionChunk,
  ChatCompletionRequest,
  decodeOptions
} from "@switchyard-ts/protocol/OpenAiChat"
import * as OpenAiResponses from "@switchyard-ts/protocol/OpenAiResponses"
import * as Plain from "@switchyard-ts/protocol/Plain"
import * as RawJson from "@switchyard-ts/protocol/RawJson"
import * as Translate from "@switchyard-ts/protocol/Translate"
import * as TranslateResponses from "@switchyard-ts/protocol/TranslateResponses"
import type * as Decision from "@switchyard-ts/routing/Decision"
import type { RoutedRequest } from "@switchyard-ts/routing/Route"
import type { Completed, Streamed } from "@switchyard-ts/routing/Router"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { ParseError } from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import { validateValue } from "./body.js"
import type * as Continuations from "./continuations.js"
import * as Messages from "./messages.js"

/**
 * How one request's answer is written back: bound to what the request said (e.g. the namespaces
 * of its tools), so the codec's decode chooses it.
 */
export interface Encoder {
  /** The JSON body of a buffered answer; `model` is the model that served it (or the route id). */
  readonly answer: (completed: Completed, model: string) => unknown
  /** The SSE writer of one streamed answer. */
  readonly stream: (streamed: Streamed, model: string) => StreamEncoding
  /** A route's own answer (noop, the advisor gate) as `/v1/decision` returns it in this format. */
  readonly decisionResponse: (answer: ChatCompletion, model: string) => unknown
  /**
   * Remember the answer {@link answer} or {@link decisionResponse} last wrote, for a later
   * continuation by id (Responses callers only; a streamed answer is remembered by its encoding
   * once it completed). Fails when another target holds its id.
   */
  readonly retain?: (
    decision: Decision.Decision,
    served: Option.Option<Target>
  ) => Effect.Effect<void, ResponseStateConflict>
}

/** The SSE text of one streamed answer. */
export interface StreamEncoding {
  /** Every event in order and the format's end marker; failures are left to {@link streamError}. */
  readonly events: Relay.Relay<string, UpstreamFailure>
  /** The last SSE events of this stream when it fails after its headers were sent. */
  readonly streamError: (failure: UpstreamFailure) => string
  /** The stream's `content-type` when it is not SSE (Gemini's JSON array). */
  readonly contentType?: string
}

/** What a codec reads from a request body. */
export interface Inbound {
  readonly routed: RoutedRequest
  /** The requested model (route id) as the caller wrote it. */
  readonly model: string
  readonly streaming: boolean
  readonly encoder: Encoder
}

/** An error response: its status and envelope body. */
export interface ErrorResponse {
  readonly status: number
  readonly body: unknown
}

/** The wire format of one inbound API. */
export interface Codec {
  /** The inbound wire format: the `wire_format` of the request's log line, its `inboundFormat`. */
  readonly format: WireFormat
  /**
   * The routed request of a parsed JSON body (an object), its `inboundFormat` this codec's
   * `format` (the router's forward-auth family check reads it); `headers` are the caller's
   * (lower-case names). `raw`: the bytes `json` was parsed from, when it came from a request body —
   * remembered for the body a target of the caller's format is sent (`RawJson.remember`). Fails
   * with `InvalidRequest` (schema, naming the field path), `TranslationError`, or
   * `ResponseStateConflict` (a Responses continuation naming state two models hold).
   */
  readonly decode: (
    json: unknown,
    headers: Readonly<Record<string, string>>,
    sessionId: RoutedRequest["sessionId"],
    raw?: RawJson.RawJson
  ) => Effect.Effect<Inbound, InvalidRequest | TranslationError | ResponseStateConflict>
  /** The status and envelope of a failure. */
  readonly error: (failure: RequestFailure) => ErrorResponse
  /** The status and envelope of a defect (a bug): 500 `internal error`. */
  readonly internalError: ErrorResponse
}

/** One SSE event of `data` alone (`data: <data>` and the blank line). */
export const sseData = (data: string) => `data: ${data}\n\n`

/**
 * The relay behind a streamed answer's pieces: the router's own (`Relay.fromStream` hands it back
 * at no cost), so the SSE writer pulls it with no `Stream` step per chunk.
 */
const piecesOf = (streamed: Streamed) => Relay.fromStream(streamed.pieces)

/**
 * The translation routing works on of a caller's native body: `translate(native)`, or — when that
 * fails — the translation of its routing view (`view`: without what only a server of its own
 * format understands), the failure kept so that a target of another format refuses the request
 * before any call. Fails when even the view cannot be translated.
 */
const translatedOrViewed = <N, T>(
  native: N,
  translate: (body: N) => Either.Either<T, TranslationError>,
  view: (body: N) => Option.Option<N>
): Effect.Effect<
  { readonly translated: T; readonly untranslatable: Option.Option<TranslationError> },
  TranslationError
> =>
  Either.match(translate(native), {
    onRight: (translated) => Effect.succeed({ translated, untranslatable: Option.none() }),
    onLeft: (error) =>
      Option.match(Option.flatMap(view(native), (body) => Either.getRight(translate(body))), {
        onSome: (translated) => Effect.succeed({ translated, untranslatable: Option.some(error) }),
        onNone: () => Effect.fail(error)
      })
  })

/** The caller's own body, with why it cannot go to another format when it cannot. */
const nativeBody = (
  format: Format,
  body: Readonly<Record<string, unknown>>,
  untranslatable: Option.Option<TranslationError>
): NativeBody =>
  Option.match(untranslatable, {
    onNone: () => ({ format, body }),
    onSome: (error) => ({ format, body, untranslatable: error })
  })

const chatStreamError = (failure: UpstreamFailure) => {
  const mapping = toHttp(failure)
  return sseData(JSON.stringify({ error: { message: mapping.message, type: "SwitchyardError", code: mapping.code } }))
}

const openAiError = (failure: RequestFailure): ErrorResponse => {
  const mapping = toHttp(failure)
  return { status: mapping.status, body: toEnvelope(mapping) }
}

const openAiInternalError: ErrorResponse = {
  status: 500,
  body: { error: { message: "internal error", type: "server_error", code: "server_error" } }
}

const chatEncoder: Encoder = {
  answer: (completed) => completed.completion,
  stream: (streamed) => ({
    events: Relay.concat(
      Relay.map(piecesOf(streamed), (pieces) => {
        const events: Array<string> = []
        for (const piece of pieces) {
          // same format: the upstream's own bytes; otherwise the chunks encoded
          if (piece.sse !== undefined) events.push(sseData(piece.sse))
          else for (const chunk of piece.chunks) events.push(sseData(JSON.stringify(chunk)))
        }
        return events
      }),
      Effect.succeed([sseData("[DONE]")])
    ),
    streamError: chatStreamError
  }),
  decisionResponse: (answer) => answer
}

/**
 * The request body itself, checked against its identity schema without a copy; the bytes it was
 * parsed from remembered for it (the upstream client sends a same-format target those bytes with
 * what changes spliced in).
 */
const validated = <A extends object>(
  decode: (value: unknown) => Either.Either<A, ParseError>,
  json: unknown,
  raw: RawJson.RawJson | undefined
): Effect.Effect<A, InvalidRequest> =>
  Effect.tap(validateValue(decode, json), (body) => {
    if (raw !== undefined && body === json) RawJson.remember(body, raw)
  })

const decodeChatRequest = Plain.decoder(ChatCompletionRequest, decodeOptions)
const decodeMessagesRequest = Plain.decoder(AnthropicMessages.MessagesRequest, decodeOptions)
const decodeResponsesBody = Plain.decoder(OpenAiResponses.ResponsesRequest, decodeOptions)

/** OpenAI Chat Completions: `/v1/chat/completions`, the OpenAI error envelope. */
export const openAiChat: Codec = {
  format: "openai_chat",
  decode: (json, headers, sessionId, raw) =>
    Effect.map(validated(decodeChatRequest, json, raw), (body) => ({
      routed: { body, headers, sessionId, inboundFormat: "openai_chat" },
      model: body.model,
      streaming: body.stream === true,
      encoder: chatEncoder
    })),
  error: openAiError,
  internalError: openAiInternalError
}

/** The SSE text of a stream's native events (an upstream of the caller's format), one per event. */
export const nativeEvents = (
  streamed: Streamed,
  encode: (event: UpstreamClient.NativeEvent) => string
): Relay.Relay<string, UpstreamFailure> =>
  Relay.map(piecesOf(streamed), (pieces) => {
    const events: Array<string> = []
    for (const piece of pieces) if (Option.isSome(piece.native)) events.push(encode(piece.native.value))
    return events
  })

/** The SSE text of a stream's chat chunks through a stateful translator, its closing events last. */
export const translatedEvents = <Event>(
  streamed: Streamed,
  translator: {
    readonly push: (chunk: ChatCompletionChunk) => ReadonlyArray<Event>
    readonly end: () => ReadonlyArray<Event>
  },
  encode: (event: Event) => string
): Relay.Relay<string, UpstreamFailure> =>
  Relay.concat(
    Relay.map(Relay.fromStream(UpstreamClient.chunksOf(streamed.pieces)), (chunks) => {
      const events: Array<string> = []
      for (const chunk of chunks) for (const event of translator.push(chunk)) events.push(encode(event))
      return events
    }),
    Effect.sync(() => translator.end().map(encode))
  )

/** Whether a streamed answer comes from a target speaking `format` (its events can be replayed). */
export const servedIn = (streamed: Streamed, format: Format): boolean =>
  Option.exists(streamed.served, (target) => target.client.format === format)

const messagesEncoder: Encoder = {
  answer: (completed, model) =>
    Option.match(completed.native, {
      onNone: () => Messages.messageOf(completed.completion, model),
      onSome: (native) => ({ ...native.body, model })
    }),
  stream: (streamed, model) => ({
    events: servedIn(streamed, "anthropic_messages")
      ? nativeEvents(streamed, (event) => Messages.nativeSseEvent(event, model))
      : translatedEvents(streamed, Translate.openAiToAnthropicStream({ model }), Messages.sseEvent),
    streamError: Messages.streamErrorEvent
  }),
  decisionResponse: (answer, model) => Messages.messageOf(answer, model)
}

/**
 * Anthropic Messages: `/v1/messages`, the Anthropic error envelope. A Messages answer from an
 * `anthropic_messages` target (the caller's body was replayed there) is written as the upstream
 * sent it, only `model` restamped; any other answer is translated from the chat shape. A request
 * whose content the chat shape cannot hold (a document inside a `tool_result`, …) is routed on
 * what can be translated and fails 400 on a target of another format.
 */
export const anthropicMessages: Codec = {
  format: "anthropic_messages",
  decode: (json, headers, sessionId, raw) =>
    Effect.flatMap(validated(decodeMessagesRequest, json, raw), (native) =>
      Effect.map(
        translatedOrViewed(native, Messages.chatRequestOf, Messages.routingView),
        ({ translated, untranslatable }): Inbound => ({
          routed: {
            body: translated,
            headers,
            sessionId,
            native: nativeBody("anthropic_messages", native, untranslatable),
            inboundFormat: "anthropic_messages"
          },
          model: native.model,
          streaming: native.stream === true,
          encoder: messagesEncoder
        })
      )),
  error: Messages.errorOf,
  internalError: { status: 500, body: AnthropicMessages.envelope(500, "internal error") }
}

const responsesSse = (event: { readonly type: string }): string =>
  `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`

/** Events whose `response.model` names the model. */
const lifecycleEvents: ReadonlySet<string> = new Set([
  "response.created",
  "response.in_progress",
  "response.completed",
  "response.failed",
  "response.incomplete"
])

/** An upstream Responses event forwarded as it came, the model of its `response` restamped. */
const nativeResponsesEvent = (event: UpstreamClient.NativeEvent, model: string): string => {
  const response = event.data["response"]
  if (!(lifecycleEvents.has(event.event) && Predicate.isRecord(response))) {
    return `event: ${event.event}\ndata: ${event.text ?? JSON.stringify(event.data)}\n\n`
  }
  return `event: ${event.event}\ndata: ${JSON.stringify({ ...event.data, response: { ...response, model } })}\n\n`
}

/** A stream that failed after its headers, in the form of the compatible system (one `error` event). */
const responsesStreamError = (failure: UpstreamFailure): string =>
  `event: error\ndata: ${
    JSON.stringify({ type: "error", error: { type: "SwitchyardError", message: toHttp(failure).message } })
  }\n\n`

/** The `error` event of a stream whose answer's id another target holds (its headers were sent). */
const conflictEvent = (conflict: ResponseStateConflict): string => {
  const mapping = toHttp(conflict)
  return `event: error\ndata: ${
    JSON.stringify({ type: "error", error: { type: "SwitchyardError", code: mapping.code, message: mapping.message } })
  }\n\n`
}

/** The response object of a `response.completed` event, when `event` is one. */
const completedResponse = (event: OpenAiResponses.StreamEvent): OpenAiResponses.ResponseObject | undefined =>
  event.type === "response.completed" && "response" in event ? event.response : undefined

/** The response id of an upstream's `response.completed` event, when `event` is one with an id. */
const nativeCompletedId = (event: UpstreamClient.NativeEvent): string | undefined => {
  const response = event.data["response"]
  return event.event === "response.completed" && Predicate.isRecord(response) && typeof response["id"] === "string"
    ? response["id"]
    : undefined
}

/**
 * `events`, then — once they ended — what `retainer` remembers of the stream's answer (`answer`,
 * read then): nothing more, or one `error` event when another target holds its id.
 */
const retainedAfter = (
  events: Relay.Relay<string, UpstreamFailure>,
  streamed: Streamed,
  retainer: Continuations.Retainer | undefined,
  answer: () => Continuations.Answer | undefined
): Relay.Relay<string, UpstreamFailure> =>
  retainer === undefined ? events : Relay.concat(
    events,
    Effect.suspend(() => {
      const completed = answer()
      if (completed === undefined) return Effect.succeed([])
      return retainer.retain(streamed.decision, streamed.served, completed).pipe(
        Effect.as([]),
        Effect.catchAll((conflict) => Effect.succeed([conflictEvent(conflict)]))
      )
    })
  )

/**
 * The Responses encoder of a request whose tools are `tools` (namespaced and custom calls
 * restored); with a `retainer`, translated answers carry its id and every completed answer is
 * remembered for a continuation by id.
 */
const responsesEncoder = (tools: TranslateResponses.ToolMap, retainer?: Continuations.Retainer): Encoder => {
  // What `answer` / `decisionResponse` last wrote (one request's encoder), for `retain`.
  let written: Continuations.Answer | undefined
  const fromChat = (completion: ChatCompletion, model: string) => {
    const response = {
      ...TranslateResponses.toResponsesResponse(Translate.fromOpenAiResponse(completion), { tools }),
      model,
      ...(retainer === undefined ? {} : { id: retainer.id })
    }
    written = { _tag: "Translated", response }
    return response
  }
  return {
    answer: (completed, model) =>
      Option.match(completed.native, {
        onNone: () => fromChat(completed.completion, model),
        onSome: (native) => {
          const id = native.body["id"]
          written = { _tag: "Native", id: typeof id === "string" ? id : undefined }
          return { ...native.body, model }
        }
      }),
    stream: (streamed, model) => {
      if (servedIn(streamed, "openai_responses")) {
        let id: string | undefined
        const events = nativeEvents(streamed, (event) => {
          id = nativeCompletedId(event) ?? id
          return nativeResponsesEvent(event, model)
        })
        return {
          events: retainedAfter(events, streamed, retainer, () => ({ _tag: "Native", id })),
          streamError: responsesStreamError
        }
      }
      const translator = TranslateResponses.chatToResponsesStream({
        model,
        tools,
        ...(retainer === undefined ? {} : { id: retainer.id })
      })
      let response: OpenAiResponses.ResponseObject | undefined
      const events = translatedEvents(streamed, translator, (event) => {
        response = completedResponse(event) ?? response
        return responsesSse(event)
      })
      return {
        events: retainedAfter(
          events,
          streamed,
          retainer,
          () => response === undefined ? undefined : { _tag: "Translated", response }
        ),
        streamError: (failure) => translator.fail(toHttp(failure).message).map(responsesSse).join("")
      }
    },
    decisionResponse: fromChat,
    ...(retainer === undefined ? {} : {
      retain: (decision: Decision.Decision, served: Option.Option<Target>) =>
        written === undefined ? Effect.void : retainer.retain(decision, served, written)
    })
  }
}

/**
 * What routing sees of a Responses request whose full translation failed: the request without
 * what only a Responses server can act on (`previous_response_id`, `conversation`, `prompt`,
 * `background`, items and content parts of other kinds, a hosted tool choice). Its answer call
 * still needs a Responses target; any other fails with the original error.
 */
const routingView = (request: OpenAiResponses.ResponsesRequest): Option.Option<OpenAiResponses.ResponsesRequest> => {
  const view: Record<string, unknown> = { ...request }
  for (const key of ["previous_response_id", "conversation", "prompt", "background"]) delete view[key]
  if (Array.isArray(request.input)) {
    view["input"] = request.input.flatMap((item) => {
      const type = Predicate.isRecord(item) && typeof item["type"] === "string" ? item["type"] : "message"
      if (!routedItems.has(type)) return []
      if (type === "message" && Predicate.isRecord(item) && Array.isArray(item["content"])) {
        return [{
          ...item,
          content: item["content"].filter((part) =>
            Predicate.isRecord(part) && typeof part["type"] === "string" && routedParts.has(part["type"])
          )
        }]
      }
      return [item]
    })
  }
  const choice = request.tool_choice
  if (Predicate.isRecord(choice) && choice["type"] !== "function" && choice["type"] !== "custom") {
    delete view["tool_choice"]
  }
  return Option.getRight(decodeResponsesBody(view))
}

const routedItems: ReadonlySet<string> = new Set([...OpenAiResponses.knownItemTypes, "additional_tools"])
const routedParts: ReadonlySet<string> = new Set(["input_text", "output_text", "refusal"])

/** The chat request routing works on, streamed with usage when the caller streams. */
const chatOf = (request: OpenAiResponses.ResponsesRequest) =>
  Either.flatMap(
    TranslateResponses.fromResponsesRequest(request),
    (neutral) =>
      Either.map(TranslateResponses.toChatRequest(neutral), (chat) => ({
        neutral,
        chat: request.stream === true ? { ...chat, stream: true, stream_options: { include_usage: true } } : chat
      }))
  )

/**
 * OpenAI Responses: `/v1/responses`, the OpenAI error envelope. A Responses answer from an
 * `openai_responses` target (the caller's body was replayed there) is written as the upstream sent
 * it, only `model` restamped; any other answer is translated from the chat shape, namespaced and
 * custom tool calls restored. A request with something only a Responses server understands is
 * routed on what can be translated and fails 400 on a target of another format. With
 * `continuations`, what a request continues by id is looked up before it is translated and its
 * answer is remembered (`continuations.ts`); without, ids are only forwarded.
 */
export const openAiResponsesWith = (continuations: Continuations.Continuations | undefined): Codec => ({
  format: "openai_responses",
  decode: (json, headers, sessionId, raw) =>
    Effect.flatMap(
      validated(decodeResponsesBody, json, raw),
      (caller) =>
        Effect.flatMap(
          continuations === undefined ? Effect.succeed(undefined) : continuations.restore(caller),
          (continuing) => {
            const request = continuing?.request ?? caller
            return Effect.map(
              translatedOrViewed(request, chatOf, routingView),
              ({ translated, untranslatable }): Inbound => ({
                routed: {
                  body: translated.chat,
                  headers,
                  sessionId,
                  native: nativeBody("openai_responses", request, untranslatable),
                  inboundFormat: "openai_responses",
                  continuation: continuing?.pin
                },
                model: request.model,
                streaming: request.stream === true,
                encoder: responsesEncoder(
                  TranslateResponses.toolMap(translated.neutral),
                  continuations === undefined || continuing === undefined
                    ? undefined
                    : continuations.retainer(continuing)
                )
              })
            )
          }
        )
    ),
  error: openAiError,
  internalError: openAiInternalError
})

/** {@link openAiResponsesWith} without continuations: ids are only forwarded. */
export const openAiResponses: Codec = openAiResponsesWith(undefined)

/** The formats `/v1/decision`'s `input_format` names (a Gemini request names its model in the URL). */
export type DecisionFormat = Exclude<Format, "gemini_generate_content">

/** The codec of each inbound format, Responses with `continuations` (`/v1/decision`'s `input_format`). */
export const byFormatWith = (
  continuations: Continuations.Continuations | undefined
): Readonly<Record<DecisionFormat, Codec>> => ({
  openai_chat: openAiChat,
  openai_responses: openAiResponsesWith(continuations),
  anthropic_messages: anthropicMessages
})

/** The codec of each inbound format (`/v1/decision`'s `input_format`), Responses ids only forwarded. */
export const byFormat: Readonly<Record<DecisionFormat, Codec>> = byFormatWith(undefined)
