/**
 * Deployment files for tests and scripts, written from typed values instead of by hand: LLM
 * clients, targets, routes of every route type, `[sessions]` and `[server]`, turned into the TOML
 * text the `switchyard` CLI and `DeploymentToml.parse` read.
 *
 * Every property is spelled as its TOML key (docs/configuration.md is the reference for what each
 * key means and accepts), so a value here reads like the file it becomes. The types say which keys
 * each table has; they do not repeat the loader's checks (ranges, references, key combinations): a
 * test that wants a load error of that kind gets it from the loader, as a user would. Tests whose
 * subject is the TOML text itself (bad files, key-path messages) write their text by hand.
 *
 * @example
 * ```ts
 * const text = DeploymentBuilder.toToml({
 *   llm_clients: { sim: DeploymentBuilder.client("openai_chat", upstream.url, { max_retries: 0 }) },
 *   targets: { weak: DeploymentBuilder.target("weak-model", "sim") },
 *   routes: { fast: DeploymentBuilder.passthrough("fast", "weak") }
 * })
 * ```
 */
import { section, type TomlTable, type TomlValue } from "./internal/toml.js"

export type { TomlTable, TomlValue } from "./internal/toml.js"

/** The wire format of an LLM client. */
export type Format = "openai_chat" | "openai_responses" | "anthropic_messages" | "gemini_generate_content"

/** `[llm_clients.<name>]`. */
export interface LlmClient {
  readonly format: Format
  readonly base_url: string
  readonly api_key_env?: string
  readonly forward_auth?: boolean
  readonly extra_headers?: Readonly<Record<string, string>>
  readonly max_retries?: number
  readonly timeout_ms?: number
  readonly breaker?: { readonly failure_threshold: number; readonly cooldown_ms: number }
}

/** `[targets.<name>]`. */
export interface Target {
  readonly id: string
  readonly llm_client: string
  readonly extra_body?: TomlTable
  readonly reasoning_effort?: string
  readonly system_prompt?: string
}

/** What a judge failure does to the request: fail it, or route without a verdict. */
export type JudgeFailure = "error" | "fail_open"

/** When a classifier consults its judge. */
export type ClassifyTrigger = "every_request" | "user_turn" | "new_session"

/** The keys every route type takes. */
export interface RouteCommon {
  readonly id: string
  readonly context_window?: number
  readonly tool_calling?: boolean
  readonly reasoning?: boolean
  readonly vision?: boolean
  readonly request_timeout_ms?: number
  readonly baseline_target?: string
}

/** The judge keys shared by capability and custom classifiers (and a stage router's classifier). */
export interface JudgeSettings {
  readonly classify_trigger?: ClassifyTrigger
  readonly message_hash_fallback?: boolean
  readonly recent_turn_window?: number
  readonly max_output_tokens?: number
  readonly judge_failure?: JudgeFailure
  readonly judge_timeout_ms?: number
  readonly late_verdict_ms?: number
  readonly max_late_verdicts?: number
}

/** The capability judge's keys (a capability route, a stage router's `[classifier]`). */
export interface CapabilitySettings extends JudgeSettings {
  readonly base_threshold: number
  readonly threshold_step?: number
  readonly prompt?: string
  readonly response_format_type?: "json_schema" | "json_object"
}

/** The keys of a custom classifier (a custom route, a `subagents` classifier). */
export interface CustomSettings extends JudgeSettings {
  /** The targets form: the judge and the labelled targets (without `models`). */
  readonly classifier_target?: string
  readonly targets?: ReadonlyArray<string>
  /** The group form: named groups of target names, `judge` and `any` among them. */
  readonly models?: Readonly<Record<string, ReadonlyArray<string>>>
  readonly default_target: string
  readonly prompt: string
  /** The inner JSON Schema of the judge's reply, as text. */
  readonly response_schema: string
  readonly policy: { readonly type: "target_selector"; readonly selector: string }
}

/** `subagents` on a passthrough or stage router route: a fixed target or a custom classifier. */
export type Subagents =
  | { readonly type: "passthrough"; readonly target: string }
  | ({ readonly type: "llm_classifier"; readonly mode: "custom" } & CustomSettings)

/** `type = "noop"`: answered by the router itself. */
export interface NoopRoute extends RouteCommon {
  readonly type: "noop"
}

/** `type = "passthrough"`. */
export interface PassthroughRoute extends RouteCommon {
  readonly type: "passthrough"
  readonly target: string
  readonly subagents?: Subagents
}

/** `type = "random"`. */
export interface RandomRoute extends RouteCommon {
  readonly type: "random"
  readonly targets: ReadonlyArray<string>
  readonly weights?: ReadonlyArray<number>
  readonly seed?: number | bigint
}

/** `type = "llm_classifier"` in capability mode (the default). */
export interface CapabilityRoute extends RouteCommon, CapabilitySettings {
  readonly type: "llm_classifier"
  readonly mode?: "capability"
  readonly classifier_target: string
  readonly weak_target: string
  readonly strong_target: string
}

/** `type = "llm_classifier"`, `mode = "custom"`. */
export interface CustomRoute extends RouteCommon, CustomSettings {
  readonly type: "llm_classifier"
  readonly mode: "custom"
}

/** `escalation.deescalation = { ... }`: the strong phase's release rules. */
export interface Deescalation {
  readonly strong_min_calls: number
  readonly confirmations: number
  readonly strong_max_calls?: number
  readonly weak_cooldown_calls?: number
}

/** `escalation = { ... }` of an escalation classifier. */
export interface Escalation {
  readonly confirmations?: number
  readonly recent_turn_window?: number
  readonly window_message_chars?: number
  readonly deescalation?: Deescalation
}

/** `type = "llm_classifier"` in escalation mode (explicit, or implied by the `escalation` table). */
export interface EscalationRoute extends RouteCommon {
  readonly type: "llm_classifier"
  readonly mode?: "escalation"
  readonly classifier_target: string
  readonly weak_target: string
  readonly strong_target: string
  readonly escalation: Escalation
  /** Accepted (and ignored) only when the mode is implied by the table. */
  readonly base_threshold?: number
  readonly classify_trigger?: "every_request"
  readonly prompt?: string
  readonly response_format_type?: "json_schema" | "json_object"
  readonly max_output_tokens?: number
  readonly judge_failure?: JudgeFailure
  readonly judge_timeout_ms?: number
}

/** `[routes.<name>.classifier]` of a stage router. */
export interface StageClassifier extends CapabilitySettings {
  readonly target: string
}

/** `[routes.<name>.handoff_notes]` of a stage router. */
export interface HandoffNotes {
  readonly escalation_note: string
  readonly deescalation_note?: string
  readonly only_on_wrong_signal_escalation?: boolean
}

/** `type = "stage_router"`. */
export interface StageRouterRoute extends RouteCommon {
  readonly type: "stage_router"
  readonly capable_target: string
  readonly efficient_target: string
  readonly picker: "efficient_first" | "capable_first"
  readonly confidence_threshold: number
  readonly recent_turn_window?: number
  readonly capable_hold_turns?: number
  readonly tool_semantics?: {
    readonly observe?: ReadonlyArray<string>
    readonly mutate?: ReadonlyArray<string>
    readonly plan?: ReadonlyArray<string>
    readonly new?: ReadonlyArray<string>
  }
  readonly capable_system_prompt?: string
  readonly efficient_system_prompt?: string
  readonly handoff_notes?: HandoffNotes
  readonly classifier?: StageClassifier
  readonly subagents?: Subagents
}

/** `[routes.<name>.stage]` of a composite route: the stage router's keys without its picker or classifier. */
export interface CompositeStage {
  readonly capable_target: string
  readonly efficient_target: string
  readonly confidence_threshold: number
  readonly recent_turn_window?: number
  readonly capable_hold_turns?: number
  readonly tool_semantics?: StageRouterRoute["tool_semantics"]
}

/** `type = "composite"`: a capability classifier setting the tier a stage router falls open to. */
export interface CompositeRoute extends RouteCommon {
  readonly type: "composite"
  readonly judge_failure?: JudgeFailure
  readonly classifier: StageClassifier
  readonly stage: CompositeStage
  readonly subagents?: Subagents
}

/** `type = "advisor"`. */
export interface AdvisorRoute extends RouteCommon {
  readonly type: "advisor"
  readonly executor_target: string
  readonly advisor_target: string
  readonly gate_trigger?: "no_tool_call" | "pattern"
  readonly gate_trigger_pattern?: string
  readonly max_reviews?: number
  readonly gate_stall_turns?: number
  readonly gate_min_tool_results?: number
  readonly advisor_max_tokens?: number
  readonly advisor_temperature?: number
  readonly transcript_max_chars?: number
  readonly fail_open?: boolean
  readonly reviewer_system_prompt?: string
  readonly redo_feedback_prefix?: string
}

/** `[routes.<name>]`: one of the route types. */
export type Route =
  | NoopRoute
  | PassthroughRoute
  | RandomRoute
  | CapabilityRoute
  | CustomRoute
  | EscalationRoute
  | StageRouterRoute
  | CompositeRoute
  | AdvisorRoute

/** `[sessions]`. */
export interface Sessions {
  readonly store?: "memory" | "redis"
  readonly max_entries?: number
  readonly ttl_ms?: number
  readonly url?: string
}

/** `[server]`: inbound auth and connection timeouts. */
export interface Server {
  readonly api_keys_env?: string | ReadonlyArray<string>
  readonly metrics_auth?: boolean
  readonly keep_alive_timeout_ms?: number
  readonly headers_timeout_ms?: number
  readonly request_timeout_ms?: number
}

/** A whole deployment file. */
export interface Deployment {
  /** `1` unless given (a test of another version writes its file by hand). */
  readonly schema_version?: number
  /** `fallback_client`: the LLM client unmatched requests are forwarded to. */
  readonly fallback_client?: string
  readonly server?: Server
  readonly sessions?: Sessions
  readonly llm_clients?: Readonly<Record<string, LlmClient>>
  readonly targets: Readonly<Record<string, Target>>
  readonly routes: Readonly<Record<string, Route>>
}

/** Route keys written as `[routes.<name>.<key>]` sections rather than inline tables. */
const routeSubTables = ["handoff_notes", "classifier", "subagents", "stage"]

/**
 * The deployment as TOML text: `schema_version` (and `fallback_client` when given), then
 * `[server]`, `[sessions]`, every `[llm_clients.*]`, `[targets.*]` and `[routes.*]` in the order
 * given, each key on its own line (`handoff_notes`, `classifier`, `subagents` and `stage` as sub-sections,
 * other tables inline). Strings are escaped; integral numbers are written as integers, others as
 * floats. Pure; never fails.
 */
export const toToml = (deployment: Deployment): string => {
  const sections = [
    section([], {
      schema_version: deployment.schema_version ?? 1,
      ...(deployment.fallback_client === undefined ? {} : { fallback_client: deployment.fallback_client })
    })
  ]
  if (deployment.server !== undefined) sections.push(section(["server"], toTable(deployment.server)))
  if (deployment.sessions !== undefined) sections.push(section(["sessions"], toTable(deployment.sessions)))
  for (const [name, client] of Object.entries(deployment.llm_clients ?? {})) {
    sections.push(section(["llm_clients", name], toTable(client)))
  }
  for (const [name, target] of Object.entries(deployment.targets)) {
    sections.push(section(["targets", name], toTable(target)))
  }
  for (const [name, route] of Object.entries(deployment.routes)) {
    sections.push(section(["routes", name], toTable(route), routeSubTables))
  }
  return `${sections.join("\n\n")}\n`
}

/**
 * A typed table as a TOML table. Every property of the interfaces above is a {@link TomlValue}
 * (or `undefined`), so copying the entries loses nothing.
 */
const toTable = (value: object): TomlTable => {
  const table: Record<string, TomlValue | undefined> = {}
  for (const [k, v] of Object.entries(value)) if (isTomlValue(v)) table[k] = v
  return table
}

const isTomlValue = (v: unknown): v is TomlValue => {
  switch (typeof v) {
    case "string":
    case "number":
    case "bigint":
    case "boolean":
      return true
    case "object":
      if (v === null) return false
      if (Array.isArray(v)) return v.every(isTomlValue)
      return Object.values(v).every((item) => item === undefined || isTomlValue(item))
    default:
      return false
  }
}

// ---------------------------------------------------------------------------------------------
// Constructors for the common shapes (a plain object literal of the types above works as well).
// ---------------------------------------------------------------------------------------------

/** A base URL where nothing listens (port 9, discard): every call to it fails to connect. */
export const deadUrl = "http://127.0.0.1:9/v1"

/** `[llm_clients.<name>]` of `format` at `base_url`, with any further keys. */
export const client = (
  format: Format,
  base_url: string,
  options: Omit<LlmClient, "format" | "base_url"> = {}
): LlmClient => ({ format, base_url, ...options })

/** `[targets.<name>]`: model `id` on client `llm_client`, with any further keys. */
export const target = (id: string, llm_client: string, options: Omit<Target, "id" | "llm_client"> = {}): Target => ({
  id,
  llm_client,
  ...options
})

/** A `noop` route. */
export const noop = (id: string, options: Omit<NoopRoute, "id" | "type"> = {}): NoopRoute => ({
  id,
  type: "noop",
  ...options
})

/** A `passthrough` route to `target`. */
export const passthrough = (
  id: string,
  target: string,
  options: Omit<PassthroughRoute, "id" | "type" | "target"> = {}
): PassthroughRoute => ({ id, type: "passthrough", target, ...options })

/** A `random` route over `targets`. */
export const random = (
  id: string,
  targets: ReadonlyArray<string>,
  options: Omit<RandomRoute, "id" | "type" | "targets"> = {}
): RandomRoute => ({ id, type: "random", targets, ...options })

/** A capability classifier route (`type = "llm_classifier"`, no `mode`). */
export const capability = (id: string, settings: Omit<CapabilityRoute, "id" | "type">): CapabilityRoute => ({
  id,
  type: "llm_classifier",
  ...settings
})

/** A custom classifier route (`mode = "custom"`). */
export const custom = (id: string, settings: Omit<CustomRoute, "id" | "type" | "mode">): CustomRoute => ({
  id,
  type: "llm_classifier",
  mode: "custom",
  ...settings
})

/** An escalation classifier route (mode implied by its `escalation` table unless `mode` is given). */
export const escalation = (id: string, settings: Omit<EscalationRoute, "id" | "type">): EscalationRoute => ({
  id,
  type: "llm_classifier",
  ...settings
})

/** A `stage_router` route. */
export const stageRouter = (id: string, settings: Omit<StageRouterRoute, "id" | "type">): StageRouterRoute => ({
  id,
  type: "stage_router",
  ...settings
})

/** A `composite` route. */
export const composite = (id: string, settings: Omit<CompositeRoute, "id" | "type">): CompositeRoute => ({
  id,
  type: "composite",
  ...settings
})

/** An `advisor` route. */
export const advisor = (id: string, settings: Omit<AdvisorRoute, "id" | "type">): AdvisorRoute => ({
  id,
  type: "advisor",
  ...settings
})

/** The route table of `routes`, each under its own id (for routes whose table name is their id). */
export const byId = (...routes: ReadonlyArray<Route>): Readonly<Record<string, Route>> =>
  Object.fromEntries(routes.map((route) => [route.id, route]))

/**
 * `deployment` with `more`'s clients, targets and routes added after its own (a name in both takes
 * `more`'s value) and `more`'s `[server]` / `[sessions]` tables and `fallback_client` when given.
 */
export const extend = (deployment: Deployment, more: Partial<Deployment>): Deployment => ({
  ...deployment,
  ...(more.schema_version === undefined ? {} : { schema_version: more.schema_version }),
  ...(more.server === undefined ? {} : { server: more.server }),
  ...(more.sessions === undefined ? {} : { sessions: more.sessions }),
  ...(more.fallback_client === undefined ? {} : { fallback_client: more.fallback_client }),
  llm_clients: { ...deployment.llm_clients, ...more.llm_clients },
  targets: { ...deployment.targets, ...more.targets },
  routes: { ...deployment.routes, ...more.routes }
})
