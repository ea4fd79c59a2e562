/**
 * The validated deployment, as data: what a deployment TOML describes once `DeploymentToml`
 * checked it — LLM clients and targets (from `@switchyard-ts/client`), route specs and the
 * `[sessions]` table. `Deployment` turns it into Layers; nothing here does any work.
 */
import type { LlmClient, Target } from "@switchyard-ts/client/Target"
import type { JsonPointer } from "@switchyard-ts/routing/JsonPointer"
import type { JsonSchema } from "@switchyard-ts/routing/JsonSchema"
import type * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"

/** Keys every route table shares. */
export interface RouteCommon {
  /** The TOML table name (`[routes.<name>]`). */
  readonly name: string
  /** The public model name clients send. */
  readonly id: string
  /** Advertised by `/v1/models` only. */
  readonly contextWindow: Option.Option<number>
  /** Advertised by `/v1/models` only. */
  readonly toolCalling: Option.Option<boolean>
  /**
   * `request_timeout_ms` (positive integer, unset by default): bounds each request of the route —
   * routing, judge and answer call, retries included; a stream until its headers — with a 504.
   */
  readonly requestTimeoutMs: Option.Option<number>
}

/** `type = "noop"`: answers `OK` itself, without any upstream. */
export interface NoopRouteSpec extends RouteCommon {
  readonly type: "noop"
}

/** `type = "passthrough"`: always the one target, no fallbacks; delegated sub-agent work per `subagents`. */
export interface PassthroughRouteSpec extends RouteCommon {
  readonly type: "passthrough"
  readonly target: Target
  /** The `subagents` table, unset by default: how delegated sub-agent work is routed instead. */
  readonly subagents: Option.Option<SubagentsSpec>
}

/** `subagents = { type = "passthrough", target = "<target>" }`: delegated work goes to one target. */
export interface PassthroughSubagentsSpec {
  readonly type: "passthrough"
  readonly target: Target
}

/**
 * `subagents` with `type = "llm_classifier"`, `mode = "custom"`: a custom classifier (the keys of a
 * custom classifier route, without the route's own `id` and route-wide keys) picks the sub-agent's
 * target. `classify_trigger` is `every_request` or `new_session` (keyed by session id and agent
 * id); `user_turn` and `message_hash_fallback = true` are rejected.
 */
export interface CustomSubagentsSpec extends CustomClassifierSettings {
  readonly type: "llm_classifier"
  readonly mode: "custom"
  readonly classifyTrigger: "every_request" | "new_session"
}

/** A route's `subagents` table. */
export type SubagentsSpec = PassthroughSubagentsSpec | CustomSubagentsSpec

/** `type = "random"`: a weighted pick among `targets`; the others are fallbacks in config order. */
export interface RandomRouteSpec extends RouteCommon {
  readonly type: "random"
  readonly targets: readonly [Target, ...Array<Target>]
  /** Same length as `targets`, finite, non-negative, at least one positive (equal when omitted). */
  readonly weights: ReadonlyArray<number>
  /** With a seed the pick sequence repeats for an identical order of calls. */
  readonly seed: Option.Option<bigint>
}

/** What a classifier route does when its judge cannot be reached: fail the request, or route without a verdict. */
export type JudgeFailurePosture = "error" | "fail_open"

/** When a capability route consults its judge. */
export type ClassifyTrigger = "every_request" | "user_turn" | "new_session"

/**
 * Late verdicts of a classifier (capability or custom route, a `subagents` classifier, a stage
 * router's `[classifier]`).
 */
export interface LateVerdictSpec {
  /**
   * `late_verdict_ms` (positive integer, unset by default; only with `judge_failure = "fail_open"`
   * and `judge_timeout_ms`): a judge call past `judge_timeout_ms` runs this much longer in the
   * background; a valid verdict it brings becomes the session's stored decision.
   */
  readonly lateVerdictMs: Option.Option<number>
  /** `max_late_verdicts` (positive integer, default 16; only with `late_verdict_ms`): background calls per route. */
  readonly maxLateVerdicts: number
}

/**
 * A capability judge: a capability route's (`classifier_target` and its keys), or a stage router's
 * `[classifier]` table (`target` and the same keys).
 */
export interface CapabilityJudgeSpec extends LateVerdictSpec {
  /** The judge; never a routing destination. */
  readonly judge: Target
  /** `base_threshold` in [0, 1]. */
  readonly baseThreshold: number
  /** `threshold_step` >= 0 (default 0), with `base_threshold + 2 * threshold_step <= 1`. */
  readonly thresholdStep: number
  /** `classify_trigger` (default `every_request`). */
  readonly classifyTrigger: ClassifyTrigger
  /** `message_hash_fallback` (default false; requires `new_session`). */
  readonly messageHashFallback: boolean
  /** `recent_turn_window` (non-negative integer), unset by default. */
  readonly recentTurnWindow: Option.Option<number>
  /** `prompt`: replaces the packaged judge system prompt (non-blank). */
  readonly prompt: Option.Option<string>
  /** `response_format_type` (default `json_schema`). */
  readonly responseFormatType: "json_schema" | "json_object"
  /** `max_output_tokens` >= 1 (default 4096). */
  readonly maxOutputTokens: number
  /** `judge_failure` (default `error`). */
  readonly judgeFailure: JudgeFailurePosture
  /**
   * `judge_timeout_ms` (positive integer, unset by default): bounds the judge consultation, retries
   * included, together with the judge client's `timeout_ms` (the tighter wins).
   */
  readonly judgeTimeoutMs: Option.Option<number>
}

/** `type = "llm_classifier"`, `mode = "capability"`: a judge estimates p_solve; weak or strong by threshold. */
export interface ClassifierRouteSpec extends RouteCommon, CapabilityJudgeSpec {
  readonly type: "llm_classifier"
  readonly mode: "capability"
  /** `weak_target` */
  readonly weak: Target
  /** `strong_target` */
  readonly strong: Target
}

/**
 * `type = "llm_classifier"`, `mode = "escalation"` (or an `escalation` table): the weak target
 * answers, the judge reads the finished turn, a session latches to strong after `confirmations`
 * consecutive escalate verdicts.
 */
export interface EscalationClassifierRouteSpec extends RouteCommon {
  readonly type: "llm_classifier"
  readonly mode: "escalation"
  /** `classifier_target`: the judge; never a routing destination. */
  readonly judge: Target
  /** `weak_target`: answers every unlatched turn. */
  readonly weak: Target
  /** `strong_target`: answers a latched session. */
  readonly strong: Target
  /** `escalation.confirmations` >= 1 (default 2). */
  readonly confirmations: number
  /** `escalation.recent_turn_window` >= 1 (default 28): window messages in the judge's transcript. */
  readonly recentTurnWindow: number
  /** `escalation.window_message_chars` >= 50 (default 500): cap of one window message. */
  readonly windowMessageChars: number
  /** `prompt`: replaces the packaged escalation prompt (non-blank). */
  readonly prompt: Option.Option<string>
  /** `response_format_type` (default `json_schema`). */
  readonly responseFormatType: "json_schema" | "json_object"
  /** `max_output_tokens` >= 1 (default 4096). */
  readonly maxOutputTokens: number
  /** `judge_failure` (default `error`). */
  readonly judgeFailure: JudgeFailurePosture
  /** `judge_timeout_ms`, as on capability routes. */
  readonly judgeTimeoutMs: Option.Option<number>
}

/**
 * `type = "llm_classifier"`, `mode = "custom"`: the judge answers the route's prompt with a JSON
 * value matching `response_schema`; `policy.selector` names one of `targets` (else `default_target`).
 */
export interface CustomClassifierRouteSpec extends RouteCommon, CustomClassifierSettings {
  readonly type: "llm_classifier"
  readonly mode: "custom"
  /** `classify_trigger` (default `every_request`). */
  readonly classifyTrigger: ClassifyTrigger
  /** `message_hash_fallback` (default false; requires `new_session`). */
  readonly messageHashFallback: boolean
}

/** The keys of a custom classifier, on a route or in a `subagents` table. */
export interface CustomClassifierSettings extends LateVerdictSpec {
  /** `classifier_target`: the judge; never a routing destination. */
  readonly judge: Target
  /** `targets`: at least two labels (target table names), unique, resolving to distinct model ids. */
  readonly targets: ReadonlyArray<Target>
  /** `default_target`: one of `targets`; chosen when the verdict names no label, or without a verdict. */
  readonly defaultTarget: Target
  /** `prompt` (required, non-blank): the judge's system prompt. */
  readonly prompt: string
  /** `response_schema`: the inner JSON Schema (a JSON object), as configured. */
  readonly responseSchema: Readonly<Record<string, unknown>>
  /** The same schema, meta-validated and compiled (the verdict is validated against it). */
  readonly compiledSchema: JsonSchema
  /** `policy = { type = "target_selector", selector = "<JSON Pointer>" }`: the selector, not the root. */
  readonly selector: JsonPointer
  /** `recent_turn_window` (non-negative integer), unset by default. */
  readonly recentTurnWindow: Option.Option<number>
  /** `max_output_tokens` >= 1 (default 4096). */
  readonly maxOutputTokens: number
  /** `judge_failure` (default `error`). */
  readonly judgeFailure: JudgeFailurePosture
  /** `judge_timeout_ms`, as on capability routes. */
  readonly judgeTimeoutMs: Option.Option<number>
}

/** A stage router's `[classifier]` table: a capability judge for the turns its signals leave undecided. */
export type StageClassifierSpec = CapabilityJudgeSpec

/** A stage router's `[handoff_notes]` table. */
export interface HandoffNotesSpec {
  /** `escalation_note` (required, non-blank). */
  readonly escalationNote: string
  /** `deescalation_note` (non-blank), unset by default. */
  readonly deescalationNote: Option.Option<string>
  /** `only_on_wrong_signal_escalation` (default true). */
  readonly onlyOnWrongSignalEscalation: boolean
}

/**
 * `type = "stage_router"`: each turn goes to the capable or the efficient target by its
 * tool-result signals; undecided turns go to the optional classifier, else the picker's default.
 * Delegated sub-agent work goes per `subagents` instead, past the stage router entirely.
 */
export interface StageRouterRouteSpec extends RouteCommon {
  readonly type: "stage_router"
  /** `capable_target` */
  readonly capable: Target
  /** `efficient_target` */
  readonly efficient: Target
  /** `picker` (required): the default tier of an undecided turn. */
  readonly picker: "efficient_first" | "capable_first"
  /** `confidence_threshold` in [0, 1] (required). */
  readonly confidenceThreshold: number
  /** `recent_turn_window` >= 0 (default 3): trailing tool calls and results the signals read. */
  readonly recentTurnWindow: number
  /** `capable_system_prompt` (non-blank), unset by default. */
  readonly capableSystemPrompt: Option.Option<string>
  /** `efficient_system_prompt` (non-blank), unset by default. */
  readonly efficientSystemPrompt: Option.Option<string>
  /** `[handoff_notes]`, unset by default. */
  readonly handoffNotes: Option.Option<HandoffNotesSpec>
  /** `[classifier]`, unset by default. */
  readonly classifier: Option.Option<StageClassifierSpec>
  /** The `subagents` table, unset by default: how delegated sub-agent work is routed instead. */
  readonly subagents: Option.Option<SubagentsSpec>
}

/**
 * `type = "advisor"`: the executor answers every turn; a turn that would end the work is reviewed
 * by the advisor (APPROVE releases it, REDO has the executor answer again with the advisor's plan).
 */
export interface AdvisorRouteSpec extends RouteCommon {
  readonly type: "advisor"
  /** `executor_target`: answers every turn the client sees. */
  readonly executor: Target
  /** `advisor_target`: reviews turns; never an answer target. */
  readonly advisor: Target
  /** `gate_trigger` (default `no_tool_call`). */
  readonly gateTrigger: "no_tool_call" | "pattern"
  /** `gate_trigger_pattern`: a valid, non-blank regular expression; required with (and only with) `pattern`. */
  readonly gateTriggerPattern: Option.Option<RegExp>
  /** `max_reviews` >= 1 (default 1): reviews per session scope (or the instance-wide scope). */
  readonly maxReviews: number
  /** `gate_stall_turns` >= 0 (default 0, off). */
  readonly gateStallTurns: number
  /** `gate_min_tool_results` >= 0 (default 0). */
  readonly gateMinToolResults: number
  /** `advisor_max_tokens` >= 1 (default 2048). */
  readonly advisorMaxTokens: number
  /** `advisor_temperature`: finite, >= 0; unset by default (omitted on the wire). */
  readonly advisorTemperature: Option.Option<number>
  /** `transcript_max_chars` >= 256 (default 200000). */
  readonly transcriptMaxChars: number
  /** `fail_open` (default true): a failed consultation releases the turn; false fails the request (502/504). */
  readonly failOpen: boolean
  /** `reviewer_system_prompt` (non-blank): replaces the packaged reviewer prompt. */
  readonly reviewerSystemPrompt: Option.Option<string>
  /** `redo_feedback_prefix` (non-blank): replaces the packaged feedback prefix. */
  readonly redoFeedbackPrefix: Option.Option<string>
}

export type RouteSpec =
  | NoopRouteSpec
  | PassthroughRouteSpec
  | RandomRouteSpec
  | ClassifierRouteSpec
  | CustomClassifierRouteSpec
  | EscalationClassifierRouteSpec
  | StageRouterRouteSpec
  | AdvisorRouteSpec

/** Where session decisions live: in this process, or in a Redis shared by several replicas. */
export type SessionStoreKind = "memory" | "redis"

/**
 * The optional `[sessions]` table: which session store, and its bounds. This package only
 * describes the store; the server builds it (`Deployment.layer` always uses the memory store).
 */
export interface SessionsSpec {
  /** `store` (default `memory`). */
  readonly store: SessionStoreKind
  /**
   * `url`, a `redis://` or `rediss://` URL: required for `store = "redis"`, rejected otherwise.
   * Redacted, since it may carry a password.
   */
  readonly url: Option.Option<Redacted.Redacted<string>>
  /**
   * `max_entries` >= 1 (default 100000): least recently used sessions are evicted beyond it.
   * Memory store only (rejected with `store = "redis"`, which Redis's own `maxmemory` bounds).
   */
  readonly maxEntries: number
  /**
   * `ttl_ms` >= 1 (default 3600000): a session idle for longer is forgotten (both stores; in Redis
   * the key's expiry, refreshed on every read and write).
   */
  readonly ttlMs: number
}

/**
 * The optional `[server]` table: who may call the server. Without it (or without `api_keys_env`)
 * every endpoint is open, as before.
 */
export interface ServerSpec {
  /**
   * The inbound API keys: the values of the variables `api_keys_env` names (one name or an array),
   * each split on commas, read at load time. Empty: inbound auth is off.
   */
  readonly apiKeys: ReadonlyArray<Redacted.Redacted<string>>
  /** `metrics_auth` (default false): `/metrics` needs a key too. Only with `api_keys_env`. */
  readonly metricsAuth: boolean
}

/** A validated deployment. Every list is sorted by table name (routes by route id). */
export interface Deployment {
  readonly clients: ReadonlyArray<LlmClient>
  readonly targets: ReadonlyArray<Target>
  readonly routes: ReadonlyArray<RouteSpec>
  readonly sessions: SessionsSpec
  readonly server: ServerSpec
}
