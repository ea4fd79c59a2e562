/**
 * The typed failures of switchyard-ts and, in one place, how each one is shown to an HTTP
 * caller (docs/http-api.md): status, OpenAI error `type` / `code`, and message.
 *
 * Upstream failures carry structured facts only (target model id, status, a bounded summary),
 * never an API key or a verbatim upstream body.
 */
import * as Schema from "effect/Schema"
import { clip } from "./Excerpt.js"

/** The upstream could not be reached, or the connection failed before a full answer arrived. */
export class TransportError extends Schema.TaggedError<TransportError>()("TransportError", {
  /** Model id of the target that was called. */
  target: Schema.String,
  /** A short, secret-free description (e.g. `connection refused`). */
  reason: Schema.String
}) {
  override get message(): string {
    return `upstream ${this.target} is unreachable: ${this.reason}`
  }
}

/** One logical call (retries included) did not finish within the client's `timeout_ms`. */
export class DeadlineExceeded extends Schema.TaggedError<DeadlineExceeded>()("DeadlineExceeded", {
  target: Schema.String,
  afterMs: Schema.Number
}) {
  override get message(): string {
    return `upstream ${this.target} did not finish within ${this.afterMs} ms, retries included`
  }
}

/** The upstream answered with a non-2xx status (after retries). */
export class UpstreamStatus extends Schema.TaggedError<UpstreamStatus>()("UpstreamStatus", {
  target: Schema.String,
  status: Schema.Int,
  /** The upstream's `error.message` when its body had one (bounded length). */
  upstreamMessage: Schema.optional(Schema.String),
  /** The upstream's `error.code` / `error.type` when present (bounded length). */
  upstreamCode: Schema.optional(Schema.String),
  /** Delay the upstream asked for through `Retry-After`, in milliseconds. */
  retryAfterMs: Schema.optional(Schema.Number),
  /** A 400 whose body says the context window was exceeded. */
  contextWindowExceeded: Schema.optional(Schema.Boolean)
}) {
  /**
   * Never the upstream's own text: spans and logs record this message, and a judge's error body
   * can quote the conversation back. `toHttp` relays `upstreamMessage` for answer calls.
   */
  override get message(): string {
    return `upstream ${this.target} answered HTTP ${this.status}`
  }
}

/** The upstream answered 2xx but its body could not be decoded as a chat completion. */
export class InvalidResponse extends Schema.TaggedError<InvalidResponse>()("InvalidResponse", {
  target: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `upstream ${this.target} sent an invalid response: ${this.reason}`
  }
}

/** Any failure of one upstream call. */
export type UpstreamFailure = TransportError | DeadlineExceeded | UpstreamStatus | InvalidResponse

/**
 * A call was refused at once, without any HTTP request, because the circuit breaker of its LLM
 * client is open (or half-open with its one probe already in flight). Maps to 503
 * `upstream_unavailable`.
 */
export class CircuitOpen extends Schema.TaggedError<CircuitOpen>()("CircuitOpen", {
  /** Model id of the target that was not called. */
  target: Schema.String,
  /** Name of the LLM client whose breaker is open. */
  client: Schema.String
}) {
  override get message(): string {
    return `upstream ${this.target} is unavailable: the circuit breaker of llm client ${this.client} is open`
  }
}

/**
 * Any failure of a call made through the upstream client: the upstream's failures, its open
 * breaker, or a request that cannot be translated into the target's wire format (no HTTP request
 * was made for those two).
 */
export type ClientFailure = UpstreamFailure | CircuitOpen | TranslationError

/**
 * A routed request (routing, judge consultation and answer call, retries included; for a stream,
 * until its response headers) did not finish within its route's `request_timeout_ms`. Maps to 504
 * `upstream_timeout`.
 */
export class RequestDeadlineExceeded extends Schema.TaggedError<RequestDeadlineExceeded>()("RequestDeadlineExceeded", {
  /** The route id (public model name). */
  route: Schema.String,
  afterMs: Schema.Number
}) {
  override get message(): string {
    return `request did not finish within ${this.afterMs} ms, retries included`
  }
}

/** The request body is not JSON or violates the request schema; `message` names the field path. */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", {
  message: Schema.String
}) {}

/**
 * A request cannot be translated to the format of the upstream it must go to without losing its
 * meaning (an audio part for an Anthropic upstream, tool-call arguments that are not a JSON object,
 * `n` > 1, …). `reason` says what, never quoting the conversation. Maps to 400
 * `invalid_request_error`.
 */
export class TranslationError extends Schema.TaggedError<TranslationError>()("TranslationError", {
  reason: Schema.String
}) {
  override get message(): string {
    return this.reason
  }
}

/** The request's `model` names no route. */
export class ModelNotFound extends Schema.TaggedError<ModelNotFound>()("ModelNotFound", {
  model: Schema.String
}) {
  override get message(): string {
    return `No route registered for model ${clip(this.model)}`
  }
}

/**
 * The kind of credential a caller carries, as a `forward_auth` client takes it: `anthropic`
 * (`anthropic_messages` clients) or `openai` (`openai_chat` and `openai_responses` clients).
 */
export const CredentialFamily = Schema.Literal("anthropic", "openai")
export type CredentialFamily = typeof CredentialFamily.Type

/**
 * The request came in on an endpoint of the other family than the caller credential its route
 * forwards (`forward_auth`): a route forwarding to Anthropic clients is called on `/v1/messages`,
 * one forwarding to OpenAI-format clients on `/v1/chat/completions` or `/v1/responses`. Raised
 * right after the route lookup, before any upstream call (judges included). Maps to 400
 * `invalid_request_error`; the message names the route (clipped) and the endpoint to use.
 */
export class ForwardAuthMismatch extends Schema.TaggedError<ForwardAuthMismatch>()("ForwardAuthMismatch", {
  /** The route id (public model name). */
  route: Schema.String,
  /** The family of the caller credential the route forwards. */
  family: CredentialFamily
}) {
  override get message(): string {
    const [provider, endpoint] = this.family === "anthropic"
      ? ["Anthropic", "/v1/messages"]
      : ["OpenAI", "/v1/chat/completions or /v1/responses"]
    return `route ${clip(this.route)} forwards the caller's ${provider} credential: call it on ${endpoint}`
  }
}

/** A route flag that, set to `false`, refuses requests using that input (`reasoning`, `tool_calling`, `vision`). */
export const Capability = Schema.Literal("reasoning", "tool_calling", "vision")
export type Capability = typeof Capability.Type

/**
 * The request uses an input its route disables (`reasoning`, `tool_calling` or `vision` set to
 * `false`): refused with 400 `unsupported_capability` before any upstream call.
 */
export class UnsupportedCapability extends Schema.TaggedError<UnsupportedCapability>()("UnsupportedCapability", {
  /** The route id (public model name). */
  route: Schema.String,
  /** The first disabled capability the request uses, in the order reasoning, tool_calling, vision. */
  capability: Capability
}) {
  override get message(): string {
    return `route ${
      clip(this.route)
    } does not support ${this.capability} (${this.capability} = false), and the request uses it`
  }
}

/** The request body is larger than the server's limit. */
export class RequestTooLarge extends Schema.TaggedError<RequestTooLarge>()("RequestTooLarge", {
  limitBytes: Schema.Number
}) {
  override get message(): string {
    return `request body exceeds the limit of ${this.limitBytes} bytes`
  }
}

/**
 * The caller did not present one of the server's inbound API keys (`[server] api_keys_env`):
 * `missing` when neither `Authorization: Bearer` nor `x-api-key` carried a key, `invalid` when the
 * key presented is not one of them. Maps to 401; the message never repeats what was presented.
 */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  reason: Schema.Literal("missing", "invalid")
}) {
  override get message(): string {
    return this.reason === "missing"
      ? "missing API key: send it as Authorization: Bearer <key> or x-api-key: <key>"
      : "invalid API key"
  }
}

/** The failures of a judge call that a posture may fold (README.md, the judge failure posture; docs/routes.md); `InvalidResponse` never is one. */
export type JudgeCallFailure = TransportError | DeadlineExceeded | UpstreamStatus

/**
 * A classifier route with `judge_failure = "error"` failed the request because its judge could not
 * be consulted. Maps to 502 (transport, upstream status), 504 (deadline) or 503 (the judge's
 * circuit breaker is open: `CircuitOpen` is not a `JudgeCallFailure`, but the `error` posture fails
 * on it as on one); the message names the judge and never quotes the judge's error body.
 */
export class JudgeUnavailable extends Schema.TaggedError<JudgeUnavailable>()("JudgeUnavailable", {
  /** Model id of the judge target. */
  judgeModel: Schema.String,
  failure: Schema.Union(TransportError, DeadlineExceeded, UpstreamStatus, CircuitOpen)
}) {
  override get message(): string {
    const failure = this.failure
    switch (failure._tag) {
      case "TransportError":
        return `judge ${this.judgeModel} is unreachable: ${failure.reason}`
      case "DeadlineExceeded":
        return `judge ${this.judgeModel} did not finish within ${failure.afterMs} ms, retries included`
      case "UpstreamStatus":
        return `judge ${this.judgeModel} answered HTTP ${failure.status}`
      case "CircuitOpen":
        return `judge ${this.judgeModel} is unavailable: the circuit breaker of llm client ${failure.client} is open`
    }
  }
}

/**
 * An advisor route with `fail_open = false` failed the request because its advisor could not be
 * consulted on the executor's turn. Mapped exactly like {@link JudgeUnavailable} (the same posture
 * combinator decides both): 502 (transport, upstream status), 504 (deadline) or 503 (the advisor's
 * circuit breaker is open); the message names the advisor and never quotes its error body.
 */
export class AdvisorUnavailable extends Schema.TaggedError<AdvisorUnavailable>()("AdvisorUnavailable", {
  /** Model id of the advisor target. */
  advisorModel: Schema.String,
  failure: Schema.Union(TransportError, DeadlineExceeded, UpstreamStatus, CircuitOpen)
}) {
  override get message(): string {
    const failure = this.failure
    switch (failure._tag) {
      case "TransportError":
        return `advisor ${this.advisorModel} is unreachable: ${failure.reason}`
      case "DeadlineExceeded":
        return `advisor ${this.advisorModel} did not finish within ${failure.afterMs} ms, retries included`
      case "UpstreamStatus":
        return `advisor ${this.advisorModel} answered HTTP ${failure.status}`
      case "CircuitOpen":
        return `advisor ${this.advisorModel} is unavailable: the circuit breaker of llm client ${failure.client} is open`
    }
  }
}

/**
 * A Responses continuation names state that two different models own: its `previous_response_id`
 * and its `conversation` were served by different targets, or an upstream answered with a response
 * id another target of the route already holds. Maps to 409 `response_state_conflict`.
 */
export class ResponseStateConflict extends Schema.TaggedError<ResponseStateConflict>()("ResponseStateConflict", {
  route: Schema.String
}) {
  override get message(): string {
    return `Responses state of route ${clip(this.route)} is held by different models`
  }
}

/**
 * A Responses auxiliary call (`/v1/responses/input_tokens`, `/v1/responses/compact`) on a route with
 * no `openai_responses` target. Maps to 400 `responses_auxiliary_unsupported`.
 */
export class ResponsesAuxiliaryUnsupported
  extends Schema.TaggedError<ResponsesAuxiliaryUnsupported>()("ResponsesAuxiliaryUnsupported", {
    route: Schema.String
  })
{
  override get message(): string {
    return "route has no OpenAI Responses target"
  }
}

/** Everything that can fail a routed request. */
export type RequestFailure =
  | ClientFailure
  | RequestDeadlineExceeded
  | JudgeUnavailable
  | AdvisorUnavailable
  | InvalidRequest
  | TranslationError
  | ModelNotFound
  | ForwardAuthMismatch
  | UnsupportedCapability
  | RequestTooLarge
  | Unauthorized
  | ResponseStateConflict
  | ResponsesAuxiliaryUnsupported

/** The OpenAI error envelope every error response uses. */
export const ErrorEnvelope = Schema.Struct({
  error: Schema.Struct({
    message: Schema.String,
    type: Schema.String,
    code: Schema.String
  })
})
export type ErrorEnvelope = typeof ErrorEnvelope.Type

/** How a failure is shown to the HTTP caller. */
export interface HttpMapping {
  readonly status: number
  readonly type: string
  readonly code: string
  readonly message: string
}

const upstream = (status: number, code: string, message: string): HttpMapping => ({
  status,
  type: "upstream_error",
  code,
  message
})

/**
 * The mapping (docs/http-api.md) of every failure. An upstream non-2xx keeps its status (a status outside
 * 400..599 becomes 502), with the upstream's own `error.message` when it had one.
 */
export const toHttp = (failure: RequestFailure): HttpMapping => {
  switch (failure._tag) {
    case "InvalidRequest":
    case "TranslationError":
    case "ForwardAuthMismatch":
      return { status: 400, type: "invalid_request_error", code: "invalid_request_error", message: failure.message }
    case "UnsupportedCapability":
      return { status: 400, type: "invalid_request_error", code: "unsupported_capability", message: failure.message }
    case "ModelNotFound":
      return { status: 404, type: "invalid_request_error", code: "model_not_found", message: failure.message }
    case "RequestTooLarge":
      return { status: 413, type: "invalid_request_error", code: "request_too_large", message: failure.message }
    case "Unauthorized":
      return { status: 401, type: "invalid_request_error", code: "invalid_api_key", message: failure.message }
    case "ResponseStateConflict":
      return { status: 409, type: "invalid_request_error", code: "response_state_conflict", message: failure.message }
    case "ResponsesAuxiliaryUnsupported":
      return {
        status: 400,
        type: "invalid_request_error",
        code: "responses_auxiliary_unsupported",
        message: failure.message
      }
    case "TransportError":
    case "InvalidResponse":
      return upstream(502, "upstream_error", failure.message)
    case "DeadlineExceeded":
      return upstream(504, "upstream_timeout", failure.message)
    case "UpstreamStatus":
      return upstream(
        failure.status >= 400 && failure.status <= 599 ? failure.status : 502,
        "upstream_error",
        failure.upstreamMessage ?? failure.message
      )
    case "CircuitOpen":
      return upstream(503, "upstream_unavailable", failure.message)
    case "RequestDeadlineExceeded":
      return upstream(504, "upstream_timeout", failure.message)
    case "JudgeUnavailable":
    case "AdvisorUnavailable":
      // One mapping for both: a routing-time consultation that the posture let fail.
      switch (failure.failure._tag) {
        case "DeadlineExceeded":
          return upstream(504, "upstream_timeout", failure.message)
        case "CircuitOpen":
          return upstream(503, "upstream_unavailable", failure.message)
        default:
          return upstream(502, "upstream_error", failure.message)
      }
  }
}

/** The envelope body of a failure. */
export const toEnvelope = (mapping: HttpMapping): ErrorEnvelope => ({
  error: { message: mapping.message, type: mapping.type, code: mapping.code }
})
