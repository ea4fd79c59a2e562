/**
 * Deployment TOML → validated `Deployment` (docs/configuration.md).
 *
 * Loading runs in two phases, as the anchor does (serde first, then validation):
 *
 * 1. Structure, decoded with `effect/Schema`: TOML syntax, `schema_version`, the top-level tables,
 *    then every client, target and route table in sorted table-name order, then `[sessions]` —
 *    unknown keys, missing keys, value types and enum variants (`format`, route `type`, and for
 *    `llm_classifier` its `mode`, `classify_trigger`, `response_format_type`, `judge_failure`;
 *    for `stage_router` its `picker` and its classifier's enums; for `advisor` its `gate_trigger`).
 *    A classifier route's mode is settled before its keys (explicit `mode`, else `escalation`
 *    when an `escalation` table is present, else `capability`): an escalation route rejects custom
 *    keys, capability routing settings (`base_threshold` only when the mode is explicit) and any
 *    `classify_trigger` but `every_request`; custom-mode keys on a capability route get
 *    `mode capability cannot use custom classifier fields`, and capability or escalation keys on
 *    a custom route `mode custom cannot use capability or escalation fields`. A passthrough or
 *    stage router route's `subagents` table is decoded on its own (after the route's own keys): `type = "passthrough"` (`target`) or `type =
 *    "llm_classifier"`, whose mode must be `custom` (`subagents llm_classifier only supports mode
 *    custom`) and whose keys are a custom route's without the route-wide ones (`id`, ...).
 * 2. Rules: table names and ids → every client (URL, retries, timeout, `forward_auth`,
 *    `api_key_env`, `extra_headers`, `breaker`) → target→client references and `extra_body` → each
 *    route (duplicate ids, `context_window`, `request_timeout_ms`, target references, weights, seed;
 *    for `llm_classifier`: target references → thresholds → `message_hash_fallback` →
 *    `recent_turn_window` → `prompt` → `max_output_tokens` → `judge_timeout_ms` → `late_verdict_ms`
 *    (needs `fail_open` and `judge_timeout_ms`) → `max_late_verdicts` (needs `late_verdict_ms`); for custom mode:
 *    `classifier_target` → `targets` (at least two, labels non-blank and unique, known targets,
 *    distinct model ids) → `default_target` (one of `targets`) → `message_hash_fallback` →
 *    `recent_turn_window` → `prompt` → `response_schema` (JSON, an object, not a provider
 *    wrapper, within the supported JSON Schema subset) → `policy.selector` (an RFC 6901 JSON
 *    Pointer, not the root) → `max_output_tokens` → `judge_timeout_ms` → `late_verdict_ms` →
 *    `max_late_verdicts`; for `subagents` (on a passthrough route after its `target`, on a stage
 *    router after its `classifier`): its `target`, or `classify_trigger` (not `user_turn`) →
 *    `message_hash_fallback` (not true) → the custom keys as above; for escalation mode:
 *    target references → `escalation.confirmations` (>= 1) → `escalation.recent_turn_window`
 *    (>= 1) → `escalation.window_message_chars` (>= 50) → `prompt` → `max_output_tokens` →
 *    `judge_timeout_ms`; for `stage_router`: `capable_target` → `efficient_target` →
 *    `confidence_threshold` ([0, 1]) → `recent_turn_window` (>= 0) → `capable_system_prompt` →
 *    `efficient_system_prompt` (non-blank) → `handoff_notes` (`escalation_note` and
 *    `deescalation_note` non-blank) → `classifier` (`target`, then a capability route's judge rules
 *    from the thresholds on, under `routes.<n>.classifier.*`) → `subagents`; for `advisor`:
 *    `executor_target` → `advisor_target` → `gate_trigger_pattern` (required exactly with
 *    `gate_trigger = "pattern"`, non-blank, a valid regular expression) → `max_reviews` →
 *    `gate_stall_turns` → `gate_min_tool_results` → `advisor_max_tokens` → `advisor_temperature` →
 *    `transcript_max_chars` → `reviewer_system_prompt` → `redo_feedback_prefix`) → `[sessions]`: `url` required with `store = "redis"` and rejected
 *    with `memory`, `max_entries` rejected with `redis`, then the URL (`redis://`/`rediss://`,
 *    never echoed: it may hold a password) and the bounds → `[server]`: every `api_keys_env`
 *    variable, `metrics_auth` (needs keys), no `forward_auth` client beside inbound keys.
 *
 * The first problem found fails the load with `InvalidConfig({ path, message })`, where `path`
 * is the TOML key path (`llm_clients.hosted.max_retries`, `routes.r.targets[1]`) and `message`
 * starts with it. Messages never contain API key values.
 *
 * Decisions:
 * - `base_url` is trimmed, parsed with `URL`, and stored as `URL.href` with trailing `/` removed
 *   (`https://api.example.com/` → `https://api.example.com`, `http://h:8001/v1/` → `http://h:8001/v1`),
 *   so callers append `/chat/completions`. A URL with a query or fragment keeps its href unchanged.
 * - Integers are parsed as `bigint` (smol-toml `integersAsBigInt: true`), so `seed` keeps all 64
 *   bits (up to 2^64-1) and `1.0` is a float, not an integer. Keys `__proto__`/`constructor` are
 *   parse errors.
 * - `extra_body` values become JSON: integers must be safe integers, floats finite; TOML
 *   datetimes are rejected.
 * - `forward_auth = true` sends the caller's credential to that client instead of a configured key
 *   (docs/configuration.md); it cannot be combined with `api_key_env` (on the client) nor with
 *   `[server] api_keys_env` (inbound auth, whose key the caller's credential header then carries).
 * - `extra_headers` credential names are rejected on every client, used or not;
 *   `anthropic_messages` clients also reject `anthropic-version` (they always send their own).
 * - `breaker` is an inline table with both `failure_threshold` and `cooldown_ms` (positive
 *   integers); `request_timeout_ms` (every route type) and `judge_timeout_ms` (`llm_classifier`)
 *   are positive integers. Milliseconds are capped at 2^53-1 like `timeout_ms`.
 */
import {
  credentialFamily,
  credentialHeaders,
  type Format,
  type LlmClient,
  type Target
} from "@switchyard-ts/client/Target"
import type { CredentialFamily } from "@switchyard-ts/protocol/Errors"
import * as JsonPointer from "@switchyard-ts/routing/JsonPointer"
import * as JsonSchema from "@switchyard-ts/routing/JsonSchema"
import * as LateVerdict from "@switchyard-ts/routing/LateVerdict"
import * as Arr from "effect/Array"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Order from "effect/Order"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Toml from "smol-toml"
import type {
  AdvisorRouteSpec,
  ClassifierRouteSpec,
  CustomClassifierRouteSpec,
  CustomClassifierSettings,
  Deployment,
  EscalationClassifierRouteSpec,
  HandoffNotesSpec,
  RandomRouteSpec,
  RouteCommon,
  RouteSpec,
  ServerSpec,
  SessionsSpec,
  StageClassifierSpec,
  StageRouterRouteSpec,
  SubagentsSpec
} from "./DeploymentSpec.js"
import {
  arrayOf,
  decodeAt,
  describeToml,
  fail,
  invalid,
  type Path,
  tableOf,
  toJsonTable,
  TomlBoolean,
  TomlInteger,
  TomlNumber,
  TomlString,
  TomlTable,
  TomlVariant,
  unknownVariant
} from "./internal/toml.js"
import type { InvalidConfig } from "./InvalidConfig.js"

// ---------------------------------------------------------------------------------------------
// Phase 1: structure
// ---------------------------------------------------------------------------------------------

const RawVersion = Schema.Struct({ schema_version: TomlInteger })

const RawTop = Schema.Struct({
  schema_version: TomlInteger,
  llm_clients: Schema.optional(tableOf(TomlTable)),
  targets: tableOf(TomlTable),
  routes: tableOf(TomlTable),
  sessions: Schema.optional(TomlTable),
  server: Schema.optional(TomlTable)
})

/** The `[server]` table: `api_keys_env` is one variable name or an array of them. */
const RawServer = Schema.Struct({
  api_keys_env: Schema.optional(
    Schema.declare(
      (u): u is string | ReadonlyArray<string> =>
        Predicate.isString(u) || (Array.isArray(u) && u.every((item) => Predicate.isString(item))),
      { message: (issue) => `expected a string or an array of strings, got ${describeToml(issue.actual)}` }
    )
  ),
  metrics_auth: Schema.optional(TomlBoolean)
})
type RawServer = typeof RawServer.Type

const RawSessions = Schema.Struct({
  store: Schema.optional(TomlVariant("memory", "redis")),
  url: Schema.optional(TomlString),
  max_entries: Schema.optional(TomlInteger),
  ttl_ms: Schema.optional(TomlInteger)
})
type RawSessions = typeof RawSessions.Type

/** `breaker = { failure_threshold = N, cooldown_ms = M }` on an LLM client: both keys required. */
const RawBreaker = Schema.compose(
  TomlTable,
  Schema.Struct({ failure_threshold: TomlInteger, cooldown_ms: TomlInteger }),
  { strict: false }
)

const RawClient = Schema.Struct({
  format: TomlString,
  base_url: TomlString,
  api_key_env: Schema.optional(TomlString),
  forward_auth: Schema.optional(TomlBoolean),
  extra_headers: Schema.optional(tableOf(TomlString)),
  max_retries: Schema.optional(TomlInteger),
  timeout_ms: Schema.optional(TomlInteger),
  breaker: Schema.optional(RawBreaker)
})
type RawClient = typeof RawClient.Type

const RawTarget = Schema.Struct({
  id: TomlString,
  llm_client: TomlString,
  extra_body: Schema.optional(TomlTable)
})
type RawTarget = typeof RawTarget.Type

const RawRouteType = Schema.Struct({ type: TomlString })

const routeCommonFields = {
  id: TomlString,
  type: TomlString,
  context_window: Schema.optional(TomlInteger),
  tool_calling: Schema.optional(TomlBoolean),
  request_timeout_ms: Schema.optional(TomlInteger)
}

const RawNoop = Schema.Struct(routeCommonFields)
/** A route's `subagents` table: decoded on its own (`decodeSubagents`), for its own key paths. */
const subagentsField = { subagents: Schema.optional(TomlTable) }

const RawPassthrough = Schema.Struct({
  ...routeCommonFields,
  target: TomlString,
  ...subagentsField
})
const RawRandom = Schema.Struct({
  ...routeCommonFields,
  targets: arrayOf(TomlString),
  weights: Schema.optional(arrayOf(TomlNumber)),
  seed: Schema.optional(TomlInteger)
})

/** The keys that settle a classifier route's mode, read before the route's own keys. */
const RawClassifierMode = Schema.Struct({
  mode: Schema.optional(TomlString),
  escalation: Schema.optional(Schema.Unknown),
  targets: Schema.optional(Schema.Unknown),
  default_target: Schema.optional(Schema.Unknown),
  response_schema: Schema.optional(Schema.Unknown),
  policy: Schema.optional(Schema.Unknown),
  strong_target: Schema.optional(Schema.Unknown),
  weak_target: Schema.optional(Schema.Unknown),
  base_threshold: Schema.optional(Schema.Unknown),
  threshold_step: Schema.optional(Schema.Unknown),
  message_hash_fallback: Schema.optional(Schema.Unknown),
  recent_turn_window: Schema.optional(Schema.Unknown),
  response_format_type: Schema.optional(Schema.Unknown)
})

const customClassifierFields = ["targets", "default_target", "response_schema", "policy"] as const
const capabilityOrEscalationFields = [
  "strong_target",
  "weak_target",
  "base_threshold",
  "threshold_step",
  "escalation"
] as const

/** A capability judge's keys: a capability route's, and a stage router's `[classifier]` table's. */
const capabilityJudgeFields = {
  base_threshold: TomlNumber,
  threshold_step: Schema.optional(TomlNumber),
  classify_trigger: Schema.optional(TomlVariant("every_request", "user_turn", "new_session")),
  message_hash_fallback: Schema.optional(TomlBoolean),
  recent_turn_window: Schema.optional(TomlInteger),
  prompt: Schema.optional(TomlString),
  response_format_type: Schema.optional(TomlVariant("json_schema", "json_object")),
  max_output_tokens: Schema.optional(TomlInteger),
  judge_failure: Schema.optional(TomlVariant("error", "fail_open")),
  judge_timeout_ms: Schema.optional(TomlInteger),
  late_verdict_ms: Schema.optional(TomlInteger),
  max_late_verdicts: Schema.optional(TomlInteger)
}

const RawClassifier = Schema.Struct({
  ...routeCommonFields,
  mode: Schema.optional(TomlString),
  classifier_target: TomlString,
  weak_target: TomlString,
  strong_target: TomlString,
  ...capabilityJudgeFields
})
type RawClassifier = typeof RawClassifier.Type

/** `policy = { type = "target_selector", selector = "<JSON Pointer>" }` (or a `[routes.<n>.policy]` table). */
const RawPolicy = Schema.compose(
  TomlTable,
  Schema.Struct({ type: TomlVariant("target_selector"), selector: TomlString }),
  { strict: false }
)

/** The keys of a custom classifier, on a route or in a `subagents` table. */
const customClassifierKeys = {
  mode: TomlString,
  classifier_target: TomlString,
  targets: arrayOf(TomlString),
  default_target: TomlString,
  prompt: TomlString,
  response_schema: TomlString,
  policy: RawPolicy,
  classify_trigger: Schema.optional(TomlVariant("every_request", "user_turn", "new_session")),
  message_hash_fallback: Schema.optional(TomlBoolean),
  recent_turn_window: Schema.optional(TomlInteger),
  response_format_type: Schema.optional(TomlVariant("json_schema")),
  max_output_tokens: Schema.optional(TomlInteger),
  judge_failure: Schema.optional(TomlVariant("error", "fail_open")),
  judge_timeout_ms: Schema.optional(TomlInteger),
  late_verdict_ms: Schema.optional(TomlInteger),
  max_late_verdicts: Schema.optional(TomlInteger)
}

const RawCustomClassifier = Schema.Struct({ ...routeCommonFields, ...customClassifierKeys })
type RawCustomClassifier = typeof RawCustomClassifier.Type

/** `subagents = { type = "passthrough", target = "<target>" }`. */
const RawPassthroughSubagents = Schema.Struct({ type: TomlString, target: TomlString })

/** `subagents` with `type = "llm_classifier"`: a custom classifier's keys, without the route-wide ones. */
const RawCustomSubagents = Schema.Struct({ type: TomlString, ...customClassifierKeys })
type RawCustomSubagents = typeof RawCustomSubagents.Type

type RawSubagents =
  | { readonly type: "passthrough"; readonly raw: typeof RawPassthroughSubagents.Type }
  | { readonly type: "llm_classifier"; readonly raw: RawCustomSubagents }

/** `[routes.<n>.escalation]` (or an inline table): the escalation mode's own keys. */
const RawEscalationTable = Schema.compose(
  TomlTable,
  Schema.Struct({
    confirmations: Schema.optional(TomlInteger),
    recent_turn_window: Schema.optional(TomlInteger),
    window_message_chars: Schema.optional(TomlInteger)
  }),
  { strict: false }
)

const RawEscalationClassifier = Schema.Struct({
  ...routeCommonFields,
  mode: Schema.optional(TomlString),
  classifier_target: TomlString,
  weak_target: TomlString,
  strong_target: TomlString,
  escalation: Schema.optional(RawEscalationTable),
  /** Accepted and ignored on an implicit escalation route; rejected before decoding on an explicit one. */
  base_threshold: Schema.optional(TomlNumber),
  classify_trigger: Schema.optional(TomlVariant("every_request", "user_turn", "new_session")),
  prompt: Schema.optional(TomlString),
  response_format_type: Schema.optional(TomlVariant("json_schema", "json_object")),
  max_output_tokens: Schema.optional(TomlInteger),
  judge_failure: Schema.optional(TomlVariant("error", "fail_open")),
  judge_timeout_ms: Schema.optional(TomlInteger)
})
type RawEscalationClassifier = typeof RawEscalationClassifier.Type

/** `[routes.<n>.handoff_notes]` of a stage router. */
const RawHandoffNotes = Schema.compose(
  TomlTable,
  Schema.Struct({
    escalation_note: TomlString,
    deescalation_note: Schema.optional(TomlString),
    only_on_wrong_signal_escalation: Schema.optional(TomlBoolean)
  }),
  { strict: false }
)

/** `[routes.<n>.classifier]` of a stage router: a capability judge's keys, `target` naming the judge. */
const RawStageClassifier = Schema.compose(
  TomlTable,
  Schema.Struct({ target: TomlString, ...capabilityJudgeFields }),
  { strict: false }
)
type RawStageClassifier = typeof RawStageClassifier.Type

const RawStageRouter = Schema.Struct({
  ...routeCommonFields,
  capable_target: TomlString,
  efficient_target: TomlString,
  picker: TomlVariant("efficient_first", "capable_first"),
  confidence_threshold: TomlNumber,
  recent_turn_window: Schema.optional(TomlInteger),
  capable_system_prompt: Schema.optional(TomlString),
  efficient_system_prompt: Schema.optional(TomlString),
  handoff_notes: Schema.optional(RawHandoffNotes),
  classifier: Schema.optional(RawStageClassifier),
  ...subagentsField
})
type RawStageRouter = typeof RawStageRouter.Type

const RawAdvisor = Schema.Struct({
  ...routeCommonFields,
  executor_target: TomlString,
  advisor_target: TomlString,
  gate_trigger: Schema.optional(TomlVariant("no_tool_call", "pattern")),
  gate_trigger_pattern: Schema.optional(TomlString),
  max_reviews: Schema.optional(TomlInteger),
  gate_stall_turns: Schema.optional(TomlInteger),
  gate_min_tool_results: Schema.optional(TomlInteger),
  advisor_max_tokens: Schema.optional(TomlInteger),
  advisor_temperature: Schema.optional(TomlNumber),
  transcript_max_chars: Schema.optional(TomlInteger),
  fail_open: Schema.optional(TomlBoolean),
  reviewer_system_prompt: Schema.optional(TomlString),
  redo_feedback_prefix: Schema.optional(TomlString)
})
type RawAdvisor = typeof RawAdvisor.Type

type RawRoute =
  | { readonly type: "noop"; readonly raw: typeof RawNoop.Type }
  | {
    readonly type: "passthrough"
    readonly raw: typeof RawPassthrough.Type
    readonly subagents: Option.Option<RawSubagents>
  }
  | { readonly type: "random"; readonly raw: typeof RawRandom.Type }
  | { readonly type: "llm_classifier"; readonly raw: RawClassifier }
  | { readonly type: "custom_classifier"; readonly raw: RawCustomClassifier }
  | { readonly type: "escalation_classifier"; readonly raw: RawEscalationClassifier }
  | {
    readonly type: "stage_router"
    readonly raw: RawStageRouter
    readonly subagents: Option.Option<RawSubagents>
  }
  | { readonly type: "advisor"; readonly raw: RawAdvisor }

interface Named<A> {
  readonly name: string
  readonly raw: A
}

interface RawDeployment {
  readonly clients: ReadonlyArray<Named<RawClient>>
  readonly targets: ReadonlyArray<Named<RawTarget>>
  readonly routes: ReadonlyArray<Named<RawRoute>>
  readonly sessions: RawSessions
  readonly server: RawServer
}

const supportedFormats = ["openai_chat", "openai_responses", "anthropic_messages"] as const
const supportedRouteTypes = ["noop", "passthrough", "random", "llm_classifier", "stage_router", "advisor"] as const
const supportedClassifierModes = ["capability", "escalation", "custom"] as const
const supportedSubagentTypes = ["passthrough", "llm_classifier"] as const
/** Capability routing settings an escalation route cannot use (`base_threshold` is ignored when the mode is implicit). */
const capabilityRoutingSettings = [
  "base_threshold",
  "threshold_step",
  "message_hash_fallback",
  "recent_turn_window"
] as const

const sortedEntries = <A>(record: Readonly<Record<string, A>>): Array<readonly [string, A]> =>
  Arr.sort(Object.entries(record), Order.mapInput(Order.string, ([key]: readonly [string, A]) => key))

const decodeClient = (name: string, table: unknown) =>
  Effect.gen(function*() {
    const path = ["llm_clients", name]
    const raw = yield* decodeAt(RawClient, path, table)
    if (!Arr.contains(supportedFormats, raw.format)) {
      return yield* fail([...path, "format"], unknownVariant(raw.format, supportedFormats))
    }
    return { name, raw }
  })

/**
 * An escalation route's keys (mode explicit, or implied by its `escalation` table): no custom
 * classifier fields, no capability routing settings (an implicit route's `base_threshold` is
 * accepted and ignored), `classify_trigger` only `every_request`.
 */
const decodeEscalation = (
  path: Path,
  table: unknown,
  head: typeof RawClassifierMode.Type,
  explicit: boolean
): Effect.Effect<RawRoute, InvalidConfig> =>
  Effect.gen(function*() {
    for (const field of customClassifierFields) {
      if (head[field] !== undefined) {
        return yield* fail([...path, field], "mode escalation cannot use custom classifier fields")
      }
    }
    for (const field of capabilityRoutingSettings) {
      if (head[field] !== undefined && (explicit || field !== "base_threshold")) {
        return yield* fail([...path, field], "mode escalation cannot use capability routing settings")
      }
    }
    const raw = yield* decodeAt(RawEscalationClassifier, path, table)
    if (raw.classify_trigger !== undefined && raw.classify_trigger !== "every_request") {
      return yield* fail([...path, "classify_trigger"], "mode escalation cannot use classify_trigger")
    }
    return { type: "escalation_classifier", raw }
  })

/** A custom classifier (route or `subagents`) rejects capability and escalation keys. */
const rejectCapabilityFields = (path: Path, head: typeof RawClassifierMode.Type): Effect.Effect<void, InvalidConfig> =>
  Effect.gen(function*() {
    for (const field of capabilityOrEscalationFields) {
      if (head[field] !== undefined) {
        return yield* fail([...path, field], "mode custom cannot use capability or escalation fields")
      }
    }
    // custom mode always sends its own json_schema format; only the default may be spelled out
    if (typeof head.response_format_type === "string" && head.response_format_type !== "json_schema") {
      return yield* fail([...path, "response_format_type"], "mode custom cannot use capability or escalation fields")
    }
  })

/**
 * A route's `subagents` table: `type = "passthrough"` with `target`, or `type = "llm_classifier"`
 * in `mode = "custom"` (any other mode, or none, is rejected) with a custom classifier's keys.
 */
const decodeSubagents = (path: Path, table: unknown): Effect.Effect<RawSubagents, InvalidConfig> =>
  Effect.gen(function*() {
    const { type } = yield* decodeAt(RawRouteType, path, table, "ignore")
    if (type === "passthrough") return { type, raw: yield* decodeAt(RawPassthroughSubagents, path, table) }
    if (type !== "llm_classifier") return yield* fail([...path, "type"], unknownVariant(type, supportedSubagentTypes))
    const head = yield* decodeAt(RawClassifierMode, path, table, "ignore")
    if (head.mode !== undefined && !Arr.contains(supportedClassifierModes, head.mode)) {
      return yield* fail([...path, "mode"], unknownVariant(head.mode, supportedClassifierModes))
    }
    if (head.mode !== "custom") {
      return yield* fail([...path, "mode"], "subagents llm_classifier only supports mode custom")
    }
    yield* rejectCapabilityFields(path, head)
    return { type, raw: yield* decodeAt(RawCustomSubagents, path, table) }
  })

/**
 * Settles a classifier route's mode (explicit `mode`, else `escalation` when an `escalation`
 * table is present, else `capability`), rejects what the mode cannot use, then decodes the mode's
 * keys.
 */
const decodeClassifier = (path: Path, table: unknown): Effect.Effect<RawRoute, InvalidConfig> =>
  Effect.gen(function*() {
    const head = yield* decodeAt(RawClassifierMode, path, table, "ignore")
    if (head.mode !== undefined) {
      const modePath = [...path, "mode"]
      if (!Arr.contains(supportedClassifierModes, head.mode)) {
        return yield* fail(modePath, unknownVariant(head.mode, supportedClassifierModes))
      }
      if (head.mode === "custom") {
        yield* rejectCapabilityFields(path, head)
        return { type: "custom_classifier", raw: yield* decodeAt(RawCustomClassifier, path, table) }
      }
      if (head.mode === "escalation") {
        if (head.escalation === undefined) {
          return yield* fail([...path, "escalation"], "mode escalation requires an escalation table")
        }
        return yield* decodeEscalation(path, table, head, true)
      }
      if (head.escalation !== undefined) {
        return yield* fail([...path, "escalation"], "mode capability cannot use escalation")
      }
    } else if (head.escalation !== undefined) {
      return yield* decodeEscalation(path, table, head, false)
    }
    for (const field of customClassifierFields) {
      if (head[field] !== undefined) {
        return yield* fail([...path, field], "mode capability cannot use custom classifier fields")
      }
    }
    return { type: "llm_classifier", raw: yield* decodeAt(RawClassifier, path, table) }
  })

/** The route's `subagents` table (at `<path>.subagents`), when it has one. */
const decodeOptionalSubagents = (
  path: Path,
  raw: { readonly subagents?: unknown }
): Effect.Effect<Option.Option<RawSubagents>, InvalidConfig> =>
  raw.subagents === undefined
    ? Effect.succeedNone
    : Effect.asSome(decodeSubagents([...path, "subagents"], raw.subagents))

const decodeRoute = (name: string, table: unknown) =>
  Effect.gen(function*() {
    const path = ["routes", name]
    const { type } = yield* decodeAt(RawRouteType, path, table, "ignore")
    switch (type) {
      case "noop":
        return { name, raw: { type, raw: yield* decodeAt(RawNoop, path, table) } }
      case "passthrough": {
        const raw = yield* decodeAt(RawPassthrough, path, table)
        return { name, raw: { type, raw, subagents: yield* decodeOptionalSubagents(path, raw) } }
      }
      case "stage_router": {
        const raw = yield* decodeAt(RawStageRouter, path, table)
        return { name, raw: { type, raw, subagents: yield* decodeOptionalSubagents(path, raw) } }
      }
      case "random":
        return { name, raw: { type, raw: yield* decodeAt(RawRandom, path, table) } }
      case "llm_classifier":
        return { name, raw: yield* decodeClassifier(path, table) }
      case "advisor":
        return { name, raw: { type, raw: yield* decodeAt(RawAdvisor, path, table) } }
    }
    return yield* fail([...path, "type"], unknownVariant(type, supportedRouteTypes))
  })

const decodeStructure = (document: Toml.TomlTable): Effect.Effect<RawDeployment, InvalidConfig> =>
  Effect.gen(function*() {
    // schema_version first: a file for another version need not match this shape at all
    const { schema_version } = yield* decodeAt(RawVersion, [], document, "ignore")
    if (schema_version !== 1n) {
      return yield* fail(["schema_version"], `unsupported schema_version ${schema_version}; expected 1`)
    }
    const top = yield* decodeAt(RawTop, [], document)
    const routeTables = sortedEntries(top.routes)
    if (routeTables.length === 0) return yield* fail(["routes"], "at least one route is required")
    const clients = yield* Effect.forEach(
      sortedEntries(top.llm_clients ?? {}),
      ([name, table]) => decodeClient(name, table)
    )
    const targets = yield* Effect.forEach(
      sortedEntries(top.targets),
      ([name, table]) => Effect.map(decodeAt(RawTarget, ["targets", name], table), (raw) => ({ name, raw }))
    )
    const routes = yield* Effect.forEach(routeTables, ([name, table]) => decodeRoute(name, table))
    const sessions = top.sessions === undefined ? {} : yield* decodeAt(RawSessions, ["sessions"], top.sessions)
    const server = top.server === undefined ? {} : yield* decodeAt(RawServer, ["server"], top.server)
    return { clients, targets, routes, sessions, server }
  })

// ---------------------------------------------------------------------------------------------
// Phase 2: rules
// ---------------------------------------------------------------------------------------------

const checkName = (path: Path, name: string, label: string): Effect.Effect<void, InvalidConfig> =>
  name === "" || name.trim() !== name
    ? fail(path, `${label} must be non-empty and have no surrounding whitespace`)
    : Effect.void

const checkNames = (raw: RawDeployment): Effect.Effect<void, InvalidConfig> =>
  Effect.gen(function*() {
    for (const { name } of raw.clients) yield* checkName(["llm_clients", name], name, "llm client name")
    for (const { name, raw: target } of raw.targets) {
      yield* checkName(["targets", name], name, "target name")
      yield* checkName(["targets", name, "id"], target.id, "target id")
    }
    for (const { name, raw: route } of raw.routes) {
      yield* checkName(["routes", name], name, "route name")
      yield* checkName(["routes", name, "id"], route.raw.id, "route id")
    }
  })

const integerInRange = (
  path: Path,
  value: bigint,
  min: bigint,
  max: bigint,
  belowMin: string = `must be at least ${min}`
): Effect.Effect<bigint, InvalidConfig> =>
  value < min
    ? fail(path, `${belowMin}, got ${value}`)
    : value > max
    ? fail(path, `must be at most ${max}, got ${value}`)
    : Effect.succeed(value)

const maxSafe = BigInt(Number.MAX_SAFE_INTEGER)

/** An integer in 1..2^53-1 (milliseconds, counts). */
const positiveInteger = (path: Path, value: bigint): Effect.Effect<bigint, InvalidConfig> =>
  integerInRange(path, value, 1n, maxSafe, "must be a positive integer")

const maxU32 = 2n ** 32n - 1n
const maxU64 = 2n ** 64n - 1n

const normalizeBaseUrl = (path: Path, input: string): Effect.Effect<string, InvalidConfig> =>
  Effect.try({
    try: () => new URL(input.trim()),
    catch: () => invalid(path, "base_url must be an absolute HTTP(S) URL")
  }).pipe(
    Effect.filterOrFail(
      (url) => (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "",
      () => invalid(path, "base_url must be an absolute HTTP(S) URL")
    ),
    Effect.map((url) => url.href.replace(/\/+$/, ""))
  )

/**
 * The value of the environment variable `variable`, named at `path` by the key `key`
 * (`api_key_env`, `api_keys_env`): the name must not be blank, the variable must be set and its
 * value not blank. Messages name the variable, never its value.
 */
const readSecret = (
  path: Path,
  key: string,
  variable: string
): Effect.Effect<Redacted.Redacted<string>, InvalidConfig> =>
  Effect.gen(function*() {
    if (variable.trim() === "") return yield* fail(path, `${key} must not be empty`)
    // the ConfigError is dropped: the variable's name is all the message needs
    const value = yield* Effect.mapError(
      Config.redacted(variable),
      () => invalid(path, `could not read ${key} ${variable}`)
    )
    if (Redacted.value(value).trim() === "") return yield* fail(path, `${key} ${variable} is empty`)
    return value
  })

const checkHeaders = (
  path: Path,
  format: Format,
  forwardAuth: boolean,
  headers: Readonly<Record<string, string>>
): Effect.Effect<Readonly<Record<string, string>>, InvalidConfig> =>
  Effect.gen(function*() {
    for (const name of Object.keys(headers)) {
      const lower = name.toLowerCase()
      // Anthropic clients always send their own anthropic-version (docs/http-api.md); a forwarding
      // one sends the caller's oauth-* betas, which extra_headers must not replace.
      const anthropicOwn = format === "anthropic_messages" &&
        (lower === "anthropic-version" || (forwardAuth && lower === "anthropic-beta"))
      if (credentialHeaders.has(lower) || anthropicOwn) {
        return yield* fail([...path, name], `extra_headers cannot set ${JSON.stringify(name)}`)
      }
    }
    return headers
  })

const buildClient = ({ name, raw }: Named<RawClient>): Effect.Effect<LlmClient, InvalidConfig> =>
  Effect.gen(function*() {
    const path = ["llm_clients", name]
    const baseUrl = yield* normalizeBaseUrl([...path, "base_url"], raw.base_url)
    const maxRetries = raw.max_retries === undefined
      ? 2
      : Number(yield* integerInRange([...path, "max_retries"], raw.max_retries, 0n, 10n))
    const timeoutMs = raw.timeout_ms === undefined
      ? Option.none()
      : Option.some(
        Number(
          yield* integerInRange([...path, "timeout_ms"], raw.timeout_ms, 1n, maxSafe, "must be a positive integer")
        )
      )
    const forwardAuth = raw.forward_auth === true
    if (forwardAuth && raw.api_key_env !== undefined) {
      return yield* fail([...path, "forward_auth"], "cannot set both forward_auth and api_key_env")
    }
    const apiKey = raw.api_key_env === undefined
      ? Option.none()
      : Option.some(yield* readSecret([...path, "api_key_env"], "api_key_env", raw.api_key_env))
    const format: Format = raw.format === "anthropic_messages"
      ? "anthropic_messages"
      : raw.format === "openai_responses"
      ? "openai_responses"
      : "openai_chat"
    const extraHeaders = yield* checkHeaders([...path, "extra_headers"], format, forwardAuth, raw.extra_headers ?? {})
    const breaker = raw.breaker === undefined ? Option.none() : Option.some({
      failureThreshold: Number(
        yield* positiveInteger([...path, "breaker", "failure_threshold"], raw.breaker.failure_threshold)
      ),
      cooldownMs: Number(yield* positiveInteger([...path, "breaker", "cooldown_ms"], raw.breaker.cooldown_ms))
    })
    return { name, format, baseUrl, apiKey, forwardAuth, extraHeaders, maxRetries, timeoutMs, breaker }
  })

const buildTarget = (
  clients: ReadonlyMap<string, LlmClient>,
  { name, raw }: Named<RawTarget>
): Effect.Effect<Target, InvalidConfig> =>
  Effect.gen(function*() {
    const path = ["targets", name]
    const client = clients.get(raw.llm_client)
    if (client === undefined) {
      return yield* fail([...path, "llm_client"], `references unknown llm client ${JSON.stringify(raw.llm_client)}`)
    }
    const extraBody = raw.extra_body === undefined ? {} : yield* toJsonTable(raw.extra_body, [...path, "extra_body"])
    return { name, id: raw.id, client, extraBody }
  })

const lookupTarget = (
  targets: ReadonlyMap<string, Target>,
  path: Path,
  name: string
): Effect.Effect<Target, InvalidConfig> => {
  const target = targets.get(name)
  return target === undefined ? fail(path, `references unknown target ${JSON.stringify(name)}`) : Effect.succeed(target)
}

const buildRandom = (
  targets: ReadonlyMap<string, Target>,
  path: Path,
  common: RouteCommon,
  raw: typeof RawRandom.Type
): Effect.Effect<RandomRouteSpec, InvalidConfig> =>
  Effect.gen(function*() {
    const targetsPath = [...path, "targets"]
    const resolved = yield* Effect.forEach(raw.targets, (name, i) => lookupTarget(targets, [...targetsPath, i], name))
    for (const [i, name] of raw.targets.entries()) {
      if (raw.targets.indexOf(name) !== i) {
        return yield* fail(
          [...targetsPath, i],
          `random targets must be unique; ${JSON.stringify(name)} is listed twice`
        )
      }
    }
    if (!Arr.isNonEmptyArray(resolved)) return yield* fail(targetsPath, "no routing targets are configured")
    const weightsPath = [...path, "weights"]
    const weights = raw.weights ?? resolved.map(() => 1)
    if (weights.length !== resolved.length) {
      return yield* fail(
        weightsPath,
        `invalid random weights: expected ${resolved.length} weights, got ${weights.length}`
      )
    }
    for (const [i, weight] of weights.entries()) {
      if (!Number.isFinite(weight) || weight < 0) {
        return yield* fail([...weightsPath, i], `weights must be finite and nonnegative, got ${weight}`)
      }
    }
    if (!weights.some((weight) => weight > 0)) return yield* fail(weightsPath, "at least one weight must be positive")
    const seed = raw.seed === undefined
      ? Option.none()
      : Option.some(yield* integerInRange([...path, "seed"], raw.seed, 0n, maxU64))
    return { ...common, type: "random", targets: resolved, weights, seed }
  })

/** Reads a TOML float (or integer) in [0, 1], NaN and infinities excluded. */
const unitInterval = (path: Path, value: number, label?: string): Effect.Effect<number, InvalidConfig> =>
  Number.isFinite(value) && value >= 0 && value <= 1
    ? Effect.succeed(value === 0 ? 0 : value) // -0.0 reads as 0
    : fail(path, `${label === undefined ? "" : `${label} `}must be between 0 and 1, got ${value}`)

const responseSchemaPlaceholder = "{{RESPONSE_SCHEMA}}"

/** A classifier `prompt`: non-blank, without the `{{RESPONSE_SCHEMA}}` placeholder. */
const checkPrompt = (path: Path, prompt: string): Effect.Effect<void, InvalidConfig> =>
  prompt.trim() === ""
    ? fail(path, "classifier prompt must not be empty")
    : prompt.includes(responseSchemaPlaceholder)
    ? fail(
      path,
      `classifier prompt must not contain ${responseSchemaPlaceholder}; the response schema is supplied automatically`
    )
    : Effect.void

/**
 * `classify_trigger`, `message_hash_fallback` (only with `new_session`) and `recent_turn_window`:
 * the triggers of the capability and custom modes.
 */
const triggerSettings = (
  path: Path,
  raw: Pick<RawClassifier, "classify_trigger" | "message_hash_fallback" | "recent_turn_window">
) =>
  Effect.gen(function*() {
    const classifyTrigger = raw.classify_trigger ?? "every_request"
    const messageHashFallback = raw.message_hash_fallback ?? false
    if (messageHashFallback && classifyTrigger !== "new_session") {
      return yield* fail(
        [...path, "message_hash_fallback"],
        "message_hash_fallback requires classify_trigger = new_session"
      )
    }
    const recentTurnWindow = raw.recent_turn_window === undefined
      ? Option.none<number>()
      : Option.some(Number(yield* integerInRange([...path, "recent_turn_window"], raw.recent_turn_window, 0n, maxSafe)))
    return { classifyTrigger, messageHashFallback, recentTurnWindow }
  })

/**
 * `max_output_tokens` (default 4096), `judge_failure` (default `"error"`) and `judge_timeout_ms`:
 * how every classifier mode calls its judge.
 */
const judgeSettings = (
  path: Path,
  raw: Pick<RawClassifier, "max_output_tokens" | "judge_failure" | "judge_timeout_ms">
) =>
  Effect.gen(function*() {
    const maxOutputTokens = raw.max_output_tokens === undefined
      ? 4096
      : Number(yield* integerInRange([...path, "max_output_tokens"], raw.max_output_tokens, 1n, maxU32))
    const judgeTimeoutMs = raw.judge_timeout_ms === undefined
      ? Option.none<number>()
      : Option.some(Number(yield* positiveInteger([...path, "judge_timeout_ms"], raw.judge_timeout_ms)))
    return { maxOutputTokens, judgeFailure: raw.judge_failure ?? "error", judgeTimeoutMs }
  })

/**
 * `late_verdict_ms` (positive integer; only with `judge_failure = "fail_open"` and `judge_timeout_ms`)
 * and `max_late_verdicts` (positive integer, default 16; only with `late_verdict_ms`), checked
 * after the judge's own settings.
 */
const lateVerdictSettings = (
  path: Path,
  raw: Pick<RawClassifier, "late_verdict_ms" | "max_late_verdicts">,
  judge: { readonly judgeFailure: "error" | "fail_open"; readonly judgeTimeoutMs: Option.Option<number> }
) =>
  Effect.gen(function*() {
    const latePath = [...path, "late_verdict_ms"]
    if (raw.late_verdict_ms === undefined) {
      if (raw.max_late_verdicts !== undefined) {
        return yield* fail([...path, "max_late_verdicts"], "max_late_verdicts requires late_verdict_ms")
      }
      return { lateVerdictMs: Option.none<number>(), maxLateVerdicts: LateVerdict.defaultMaxLateVerdicts }
    }
    const lateVerdictMs = Number(yield* positiveInteger(latePath, raw.late_verdict_ms))
    if (judge.judgeFailure !== "fail_open") {
      return yield* fail(latePath, "late_verdict_ms requires judge_failure = \"fail_open\"")
    }
    if (Option.isNone(judge.judgeTimeoutMs)) {
      return yield* fail(latePath, "late_verdict_ms requires judge_timeout_ms (the deadline the request waits for)")
    }
    const maxLateVerdicts = raw.max_late_verdicts === undefined
      ? LateVerdict.defaultMaxLateVerdicts
      : Number(yield* positiveInteger([...path, "max_late_verdicts"], raw.max_late_verdicts))
    return { lateVerdictMs: Option.some(lateVerdictMs), maxLateVerdicts }
  })

/** The keys a capability judge is configured with (a capability route's, a stage router's `[classifier]`). */
type RawCapabilityJudge = Pick<
  RawClassifier,
  | "base_threshold"
  | "threshold_step"
  | "classify_trigger"
  | "message_hash_fallback"
  | "recent_turn_window"
  | "prompt"
  | "response_format_type"
  | "max_output_tokens"
  | "judge_failure"
  | "judge_timeout_ms"
  | "late_verdict_ms"
  | "max_late_verdicts"
>

/**
 * A capability judge's settings, checked in order: thresholds → `message_hash_fallback` →
 * `recent_turn_window` → `prompt` → `max_output_tokens` → `judge_timeout_ms`.
 */
const capabilityJudgeSettings = (path: Path, raw: RawCapabilityJudge) =>
  Effect.gen(function*() {
    // thresholds
    const baseThreshold = yield* unitInterval([...path, "base_threshold"], raw.base_threshold)
    const stepPath = [...path, "threshold_step"]
    const step = raw.threshold_step ?? 0
    if (!Number.isFinite(step) || step < 0) {
      return yield* fail(stepPath, `must be finite and at least 0, got ${step}`)
    }
    const thresholdStep = step === 0 ? 0 : step // -0.0 reads as 0
    const highest = baseThreshold + 2 * thresholdStep
    if (highest > 1 + Number.EPSILON) {
      return yield* fail(stepPath, `base_threshold + 2 * threshold_step must be at most 1, got ${highest}`)
    }
    const { classifyTrigger, messageHashFallback, recentTurnWindow } = yield* triggerSettings(path, raw)
    // prompt
    if (raw.prompt !== undefined) yield* checkPrompt([...path, "prompt"], raw.prompt)
    // the rest
    const settings = yield* judgeSettings(path, raw)
    const late = yield* lateVerdictSettings(path, raw, settings)
    return {
      baseThreshold,
      thresholdStep,
      classifyTrigger,
      messageHashFallback,
      recentTurnWindow,
      prompt: Option.fromNullable(raw.prompt),
      responseFormatType: raw.response_format_type ?? "json_schema",
      ...settings,
      ...late
    }
  })

/** `classifier_target`, `weak_target`, `strong_target` of a capability or escalation route, in that order. */
const weakStrongTargets = (
  targets: ReadonlyMap<string, Target>,
  path: Path,
  raw: { readonly classifier_target: string; readonly weak_target: string; readonly strong_target: string }
) =>
  Effect.gen(function*() {
    const judge = yield* lookupTarget(targets, [...path, "classifier_target"], raw.classifier_target)
    const weak = yield* lookupTarget(targets, [...path, "weak_target"], raw.weak_target)
    const strong = yield* lookupTarget(targets, [...path, "strong_target"], raw.strong_target)
    return { judge, weak, strong }
  })

const buildClassifier = (
  targets: ReadonlyMap<string, Target>,
  path: Path,
  common: RouteCommon,
  raw: RawClassifier
): Effect.Effect<ClassifierRouteSpec, InvalidConfig> =>
  Effect.gen(function*() {
    const { judge, strong, weak } = yield* weakStrongTargets(targets, path, raw)
    const settings = yield* capabilityJudgeSettings(path, raw)
    return { ...common, type: "llm_classifier", mode: "capability", judge, weak, strong, ...settings }
  })

const buildStageClassifier = (
  targets: ReadonlyMap<string, Target>,
  path: Path,
  raw: RawStageClassifier
): Effect.Effect<StageClassifierSpec, InvalidConfig> =>
  Effect.gen(function*() {
    const judge = yield* lookupTarget(targets, [...path, "target"], raw.target)
    const settings = yield* capabilityJudgeSettings(path, raw)
    return { judge, ...settings }
  })

/** `[handoff_notes]`: `escalation_note` required, both notes non-blank. */
const buildHandoffNotes = (
  path: Path,
  raw: NonNullable<RawStageRouter["handoff_notes"]>
): Effect.Effect<HandoffNotesSpec, InvalidConfig> =>
  Effect.gen(function*() {
    if (raw.escalation_note.trim() === "") {
      return yield* fail([...path, "escalation_note"], "escalation_note must not be empty")
    }
    const deescalationNote = yield* optionalText(path, raw, "deescalation_note")
    return {
      escalationNote: raw.escalation_note,
      deescalationNote,
      onlyOnWrongSignalEscalation: raw.only_on_wrong_signal_escalation ?? true
    }
  })

const buildStageRouter = (
  targets: ReadonlyMap<string, Target>,
  path: Path,
  common: RouteCommon,
  raw: RawStageRouter,
  rawSubagents: Option.Option<RawSubagents>
): Effect.Effect<StageRouterRouteSpec, InvalidConfig> =>
  Effect.gen(function*() {
    // references
    const capable = yield* lookupTarget(targets, [...path, "capable_target"], raw.capable_target)
    const efficient = yield* lookupTarget(targets, [...path, "efficient_target"], raw.efficient_target)
    // signals
    const confidenceThreshold = yield* unitInterval(
      [...path, "confidence_threshold"],
      raw.confidence_threshold,
      "confidence_threshold"
    )
    const recentTurnWindow = raw.recent_turn_window === undefined
      ? 3
      : Number(yield* integerInRange([...path, "recent_turn_window"], raw.recent_turn_window, 0n, maxSafe))
    // texts
    const capableSystemPrompt = yield* optionalText(path, raw, "capable_system_prompt")
    const efficientSystemPrompt = yield* optionalText(path, raw, "efficient_system_prompt")
    const handoffNotes = raw.handoff_notes === undefined
      ? Option.none()
      : Option.some(yield* buildHandoffNotes([...path, "handoff_notes"], raw.handoff_notes))
    // the judge
    const classifier = raw.classifier === undefined
      ? Option.none()
      : Option.some(yield* buildStageClassifier(targets, [...path, "classifier"], raw.classifier))
    // delegated sub-agent work
    const subagents = yield* buildOptionalSubagents(targets, path, rawSubagents)
    return {
      ...common,
      type: "stage_router",
      capable,
      efficient,
      picker: raw.picker,
      confidenceThreshold,
      recentTurnWindow,
      capableSystemPrompt,
      efficientSystemPrompt,
      handoffNotes,
      classifier,
      subagents
    }
  })

const buildEscalationClassifier = (
  targets: ReadonlyMap<string, Target>,
  path: Path,
  common: RouteCommon,
  raw: RawEscalationClassifier
): Effect.Effect<EscalationClassifierRouteSpec, InvalidConfig> =>
  Effect.gen(function*() {
    const { judge, strong, weak } = yield* weakStrongTargets(targets, path, raw)
    // the escalation table
    const table = raw.escalation ?? {}
    const escalationPath = [...path, "escalation"]
    const confirmations = table.confirmations === undefined
      ? 2
      : Number(
        yield* integerInRange(
          [...escalationPath, "confirmations"],
          table.confirmations,
          1n,
          maxSafe,
          "confirmations must be at least 1"
        )
      )
    const recentTurnWindow = table.recent_turn_window === undefined
      ? 28
      : Number(yield* integerInRange([...escalationPath, "recent_turn_window"], table.recent_turn_window, 1n, maxSafe))
    const windowMessageChars = table.window_message_chars === undefined
      ? 500
      : Number(
        yield* integerInRange([...escalationPath, "window_message_chars"], table.window_message_chars, 50n, maxSafe)
      )
    // prompt
    if (raw.prompt !== undefined) yield* checkPrompt([...path, "prompt"], raw.prompt)
    // the rest
    const settings = yield* judgeSettings(path, raw)
    return {
      ...common,
      type: "llm_classifier",
      mode: "escalation",
      judge,
      weak,
      strong,
      confirmations,
      recentTurnWindow,
      windowMessageChars,
      prompt: Option.fromNullable(raw.prompt),
      responseFormatType: raw.response_format_type ?? "json_schema",
      ...settings
    }
  })

/**
 * `response_schema`: a TOML string holding the inner JSON Schema of the verdict — JSON, an object,
 * not a provider wrapper (`json_schema` key), within the supported subset (`JsonSchema.compile`).
 */
const parseResponseSchema = (
  path: Path,
  text: string
): Effect.Effect<
  { readonly document: Readonly<Record<string, unknown>>; readonly compiled: JsonSchema.JsonSchema },
  InvalidConfig
> =>
  Effect.gen(function*() {
    const parsed = Schema.decodeUnknownEither(Schema.parseJson())(text)
    if (Either.isLeft(parsed)) return yield* fail(path, "response_schema is invalid JSON")
    const document = parsed.right
    if (!isJsonObject(document)) return yield* fail(path, "response_schema must be a JSON object")
    if (Object.hasOwn(document, "json_schema")) {
      return yield* fail(
        path,
        "response_schema must be the inner JSON Schema, not a provider response_format wrapper (it has a json_schema key)"
      )
    }
    const compiled = JsonSchema.compile(document)
    if (Either.isLeft(compiled)) {
      const { at, message } = compiled.left
      return yield* fail(path, `response_schema is not a supported JSON Schema at ${JSON.stringify(at)}: ${message}`)
    }
    return { document, compiled: compiled.right }
  })

const isJsonObject = (u: unknown): u is Readonly<Record<string, unknown>> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** The keys of a custom classifier (route or `subagents` table), in the documented order. */
const customSettings = (
  targets: ReadonlyMap<string, Target>,
  path: Path,
  raw: RawCustomSubagents
) =>
  Effect.gen(function*() {
    // references
    const judge = yield* lookupTarget(targets, [...path, "classifier_target"], raw.classifier_target)
    const targetsPath = [...path, "targets"]
    if (raw.targets.length < 2) return yield* fail(targetsPath, "custom classifier requires at least two targets")
    const labels: Array<string> = []
    const resolved: Array<Target> = []
    for (const [i, rawLabel] of raw.targets.entries()) {
      const label = rawLabel.trim()
      if (label === "") return yield* fail([...targetsPath, i], "custom classifier target labels must not be empty")
      if (labels.includes(label)) {
        return yield* fail(
          [...targetsPath, i],
          `custom classifier targets must be unique; ${JSON.stringify(label)} is listed twice`
        )
      }
      const target = yield* lookupTarget(targets, [...targetsPath, i], label)
      const twin = resolved.find((other) => other.id === target.id)
      if (twin !== undefined) {
        return yield* fail(
          [...targetsPath, i],
          `resolved target ${JSON.stringify(target.id)} is duplicated (targets ${JSON.stringify(twin.name)} and ${
            JSON.stringify(label)
          } name the same model)`
        )
      }
      labels.push(label)
      resolved.push(target)
    }
    const defaultLabel = raw.default_target.trim()
    const defaultTarget = resolved.find((target) => target.name === defaultLabel)
    if (defaultTarget === undefined) {
      return yield* fail(
        [...path, "default_target"],
        `default_target ${JSON.stringify(defaultLabel)} must be one of targets`
      )
    }
    const { classifyTrigger, messageHashFallback, recentTurnWindow } = yield* triggerSettings(path, raw)
    // prompt, schema, selector
    yield* checkPrompt([...path, "prompt"], raw.prompt)
    const schema = yield* parseResponseSchema([...path, "response_schema"], raw.response_schema)
    const selectorPath = [...path, "policy", "selector"]
    const selector = JsonPointer.parse(raw.policy.selector)
    if (Either.isLeft(selector)) {
      return yield* fail(selectorPath, `selector is not a valid JSON Pointer: ${selector.left}`)
    }
    if (JsonPointer.isRoot(selector.right)) {
      return yield* fail(
        selectorPath,
        "selector must not be the root pointer \"\"; point at the member naming the target"
      )
    }
    // the rest
    const settings = yield* judgeSettings(path, raw)
    const late = yield* lateVerdictSettings(path, raw, settings)
    const custom: CustomClassifierSettings = {
      judge,
      targets: resolved,
      defaultTarget,
      prompt: raw.prompt,
      responseSchema: schema.document,
      compiledSchema: schema.compiled,
      selector: selector.right,
      recentTurnWindow,
      ...settings,
      ...late
    }
    return { custom, classifyTrigger, messageHashFallback }
  })

const buildCustomClassifier = (
  targets: ReadonlyMap<string, Target>,
  path: Path,
  common: RouteCommon,
  raw: RawCustomClassifier
): Effect.Effect<CustomClassifierRouteSpec, InvalidConfig> =>
  Effect.map(customSettings(targets, path, raw), ({ classifyTrigger, custom, messageHashFallback }) => ({
    ...common,
    type: "llm_classifier",
    mode: "custom",
    ...custom,
    classifyTrigger,
    messageHashFallback
  }))

/**
 * A `subagents` table: a fixed target, or a custom classifier whose `classify_trigger` is
 * `every_request` or `new_session` (a sub-agent is identified by its session and agent ids:
 * `user_turn` and `message_hash_fallback = true` are rejected first).
 */
const buildSubagents = (
  targets: ReadonlyMap<string, Target>,
  path: Path,
  subagents: RawSubagents
): Effect.Effect<SubagentsSpec, InvalidConfig> =>
  Effect.gen(function*() {
    if (subagents.type === "passthrough") {
      return { type: "passthrough", target: yield* lookupTarget(targets, [...path, "target"], subagents.raw.target) }
    }
    const { raw } = subagents
    if (raw.classify_trigger === "user_turn") {
      return yield* fail(
        [...path, "classify_trigger"],
        "subagents classify_trigger must be every_request or new_session, got user_turn"
      )
    }
    if (raw.message_hash_fallback === true) {
      return yield* fail(
        [...path, "message_hash_fallback"],
        "subagents cannot use message_hash_fallback: a sub-agent is identified by its session id and agent id"
      )
    }
    const { custom } = yield* customSettings(targets, path, raw)
    return {
      type: "llm_classifier",
      mode: "custom",
      ...custom,
      classifyTrigger: raw.classify_trigger === "new_session" ? "new_session" : "every_request"
    }
  })

/** The route's `subagents` table (at `<path>.subagents`), when it has one. */
const buildOptionalSubagents = (
  targets: ReadonlyMap<string, Target>,
  path: Path,
  subagents: Option.Option<RawSubagents>
): Effect.Effect<Option.Option<SubagentsSpec>, InvalidConfig> =>
  Option.match(subagents, {
    onNone: () => Effect.succeedNone,
    onSome: (raw) => Effect.asSome(buildSubagents(targets, [...path, "subagents"], raw))
  })

/** The optional text key `key` of `raw` (at `path`): when set, it must not be blank. */
const optionalText = <K extends string>(
  path: Path,
  raw: { readonly [P in K]?: string | undefined },
  key: K
): Effect.Effect<Option.Option<string>, InvalidConfig> => nonBlank([...path, key], raw[key], key)

/** A prompt-like string key: when set, it must not be blank. */
const nonBlank = (
  path: Path,
  value: string | undefined,
  what: string
): Effect.Effect<Option.Option<string>, InvalidConfig> =>
  value === undefined
    ? Effect.succeedNone
    : value.trim() === ""
    ? fail(path, `${what} must not be empty`)
    : Effect.succeed(Option.some(value))

const buildAdvisor = (
  targets: ReadonlyMap<string, Target>,
  path: Path,
  common: RouteCommon,
  raw: RawAdvisor
): Effect.Effect<AdvisorRouteSpec, InvalidConfig> =>
  Effect.gen(function*() {
    // references
    const executor = yield* lookupTarget(targets, [...path, "executor_target"], raw.executor_target)
    const advisor = yield* lookupTarget(targets, [...path, "advisor_target"], raw.advisor_target)
    // trigger and pattern
    const gateTrigger = raw.gate_trigger ?? "no_tool_call"
    const patternPath = [...path, "gate_trigger_pattern"]
    if (gateTrigger === "pattern" && raw.gate_trigger_pattern === undefined) {
      return yield* fail(patternPath, "gate_trigger_pattern is required when gate_trigger = \"pattern\"")
    }
    if (gateTrigger !== "pattern" && raw.gate_trigger_pattern !== undefined) {
      return yield* fail(patternPath, "gate_trigger_pattern requires gate_trigger = \"pattern\"")
    }
    const gateTriggerPattern = raw.gate_trigger_pattern === undefined ? Option.none() : Option.some(
      yield* raw.gate_trigger_pattern.trim() === ""
        ? fail(patternPath, "gate_trigger_pattern must not be empty")
        : compilePattern(patternPath, raw.gate_trigger_pattern)
    )
    // budgets and limits
    const maxReviews = raw.max_reviews === undefined
      ? 1
      : Number(yield* integerInRange([...path, "max_reviews"], raw.max_reviews, 1n, maxU32))
    const gateStallTurns = raw.gate_stall_turns === undefined
      ? 0
      : Number(yield* integerInRange([...path, "gate_stall_turns"], raw.gate_stall_turns, 0n, maxU32))
    const gateMinToolResults = raw.gate_min_tool_results === undefined
      ? 0
      : Number(yield* integerInRange([...path, "gate_min_tool_results"], raw.gate_min_tool_results, 0n, maxU32))
    const advisorMaxTokens = raw.advisor_max_tokens === undefined
      ? 2048
      : Number(yield* integerInRange([...path, "advisor_max_tokens"], raw.advisor_max_tokens, 1n, maxU32))
    const temperature = raw.advisor_temperature
    if (temperature !== undefined && !(Number.isFinite(temperature) && temperature >= 0)) {
      return yield* fail([...path, "advisor_temperature"], `must be finite and at least 0, got ${temperature}`)
    }
    const transcriptMaxChars = raw.transcript_max_chars === undefined
      ? 200_000
      : Number(yield* integerInRange([...path, "transcript_max_chars"], raw.transcript_max_chars, 256n, maxSafe))
    // texts
    const reviewerSystemPrompt = yield* optionalText(path, raw, "reviewer_system_prompt")
    const redoFeedbackPrefix = yield* optionalText(path, raw, "redo_feedback_prefix")
    return {
      ...common,
      type: "advisor",
      executor,
      advisor,
      gateTrigger,
      gateTriggerPattern,
      maxReviews,
      gateStallTurns,
      gateMinToolResults,
      advisorMaxTokens,
      advisorTemperature: Option.map(Option.fromNullable(temperature), (t) => (t === 0 ? 0 : t)), // -0.0 reads as 0
      transcriptMaxChars,
      failOpen: raw.fail_open ?? true,
      reviewerSystemPrompt,
      redoFeedbackPrefix
    }
  })

/**
 * A `gate_trigger_pattern` as a JavaScript regular expression with the `u` flag (searched, not
 * anchored); the message carries the engine's own complaint.
 */
const compilePattern = (path: Path, pattern: string): Effect.Effect<RegExp, InvalidConfig> =>
  Effect.try({
    try: () => new RegExp(pattern, "u"),
    catch: (error) =>
      invalid(
        path,
        `gate_trigger_pattern is not a valid regular expression: ${
          error instanceof Error ? error.message : String(error)
        }`
      )
  })

const buildRoute = (
  targets: ReadonlyMap<string, Target>,
  { name, raw: route }: Named<RawRoute>
): Effect.Effect<RouteSpec, InvalidConfig> =>
  Effect.gen(function*() {
    const path = ["routes", name]
    const { raw } = route
    const contextWindow = raw.context_window === undefined
      ? Option.none()
      : Option.some(
        Number(
          yield* integerInRange(
            [...path, "context_window"],
            raw.context_window,
            1n,
            maxU32,
            "must be greater than zero"
          )
        )
      )
    const requestTimeoutMs = raw.request_timeout_ms === undefined
      ? Option.none()
      : Option.some(Number(yield* positiveInteger([...path, "request_timeout_ms"], raw.request_timeout_ms)))
    const common: RouteCommon = {
      name,
      id: raw.id,
      contextWindow,
      toolCalling: Option.fromNullable(raw.tool_calling),
      requestTimeoutMs
    }
    switch (route.type) {
      case "noop":
        return { ...common, type: "noop" }
      case "passthrough": {
        const target = yield* lookupTarget(targets, [...path, "target"], route.raw.target)
        const subagents = yield* buildOptionalSubagents(targets, path, route.subagents)
        return { ...common, type: "passthrough", target, subagents }
      }
      case "random":
        return yield* buildRandom(targets, path, common, route.raw)
      case "llm_classifier":
        return yield* buildClassifier(targets, path, common, route.raw)
      case "custom_classifier":
        return yield* buildCustomClassifier(targets, path, common, route.raw)
      case "escalation_classifier":
        return yield* buildEscalationClassifier(targets, path, common, route.raw)
      case "stage_router":
        return yield* buildStageRouter(targets, path, common, route.raw, route.subagents)
      case "advisor":
        return yield* buildAdvisor(targets, path, common, route.raw)
    }
  })

const checkDuplicateIds = (routes: ReadonlyArray<Named<RawRoute>>): Effect.Effect<void, InvalidConfig> =>
  Effect.gen(function*() {
    const seen = new Set<string>()
    for (const { name, raw } of routes) {
      if (seen.has(raw.raw.id)) return yield* fail(["routes", name, "id"], `duplicate route model ${raw.raw.id}`)
      seen.add(raw.raw.id)
    }
  })

/** A `redis://` or `rediss://` URL with a host; the message never repeats the URL (it may hold a password). */
const checkRedisUrl = (path: Path, input: string): Effect.Effect<Redacted.Redacted<string>, InvalidConfig> =>
  Effect.try({
    try: () => new URL(input.trim()),
    catch: () => invalid(path, "url must be a redis:// or rediss:// URL")
  }).pipe(
    Effect.filterOrFail(
      (url) => (url.protocol === "redis:" || url.protocol === "rediss:") && url.hostname !== "",
      () => invalid(path, "url must be a redis:// or rediss:// URL")
    ),
    Effect.as(Redacted.make(input.trim()))
  )

const buildSessions = (raw: RawSessions): Effect.Effect<SessionsSpec, InvalidConfig> =>
  Effect.gen(function*() {
    const store = raw.store ?? "memory"
    if (store === "redis" && raw.url === undefined) {
      return yield* fail(["sessions", "url"], "url is required when store = \"redis\"")
    }
    if (store === "memory" && raw.url !== undefined) {
      return yield* fail(["sessions", "url"], "url applies to store = \"redis\" only")
    }
    if (store === "redis" && raw.max_entries !== undefined) {
      return yield* fail(
        ["sessions", "max_entries"],
        "max_entries applies to store = \"memory\" only (bound Redis with its maxmemory setting)"
      )
    }
    const url = raw.url === undefined ? Option.none() : Option.some(yield* checkRedisUrl(["sessions", "url"], raw.url))
    const maxEntries = raw.max_entries === undefined
      ? 100_000
      : Number(yield* integerInRange(["sessions", "max_entries"], raw.max_entries, 1n, maxSafe))
    const ttlMs = raw.ttl_ms === undefined
      ? 3_600_000
      : Number(yield* integerInRange(["sessions", "ttl_ms"], raw.ttl_ms, 1n, maxSafe))
    return { store, url, maxEntries, ttlMs }
  })

/**
 * The `[server]` table: the inbound API keys, every variable of `api_keys_env` read and its value
 * split on commas (items trimmed, empty ones dropped; a variable with no key left is empty), and
 * `metrics_auth`, which needs keys. A forwarding client cannot be combined with inbound keys: the
 * caller's credential header would then carry the router's own key.
 */
const buildServer = (raw: RawServer, clients: ReadonlyArray<LlmClient>): Effect.Effect<ServerSpec, InvalidConfig> =>
  Effect.gen(function*() {
    const path = ["server", "api_keys_env"]
    const variables = raw.api_keys_env === undefined
      ? []
      : typeof raw.api_keys_env === "string"
      ? [{ path, variable: raw.api_keys_env }]
      : raw.api_keys_env.map((variable, i) => ({ path: [...path, i], variable }))
    if (raw.api_keys_env !== undefined && variables.length === 0) {
      return yield* fail(path, "api_keys_env must name at least one variable")
    }
    const apiKeys = yield* Effect.forEach(
      variables,
      ({ path, variable }) =>
        Effect.flatMap(readSecret(path, "api_keys_env", variable), (value) => {
          const keys = Redacted.value(value).split(",").map((key) => key.trim()).filter((key) => key !== "")
          return keys.length === 0
            ? fail(path, `api_keys_env ${variable} is empty`)
            : Effect.succeed(keys.map((key) => Redacted.make(key)))
        })
    )
    const metricsAuth = raw.metrics_auth === true
    if (metricsAuth && apiKeys.length === 0) {
      return yield* fail(["server", "metrics_auth"], "metrics_auth needs api_keys_env")
    }
    const forwarding = clients.find((client) => client.forwardAuth === true)
    if (forwarding !== undefined && apiKeys.length > 0) {
      return yield* fail(
        ["llm_clients", forwarding.name, "forward_auth"],
        "forward_auth cannot be combined with [server] api_keys_env: the caller's Authorization / x-api-key " +
          "is then the router's own key, which is never forwarded"
      )
    }
    return { apiKeys: apiKeys.flat(), metricsAuth }
  })

const byName = <A extends { readonly name: string }>(items: ReadonlyArray<A>): ReadonlyMap<string, A> =>
  new Map(items.map((item) => [item.name, item]))

const parseToml = (text: string): Effect.Effect<Toml.TomlTable, InvalidConfig> =>
  Effect.try({
    try: () => Toml.parse(text, { integersAsBigInt: true, unsafeKeyBehaviour: "throw" }),
    catch: (error) => {
      const detail = error instanceof Toml.TomlError
        ? `${error.message.split("\n")[0] ?? ""} (line ${error.line}, column ${error.column})`
        : error instanceof Error
        ? error.message
        : String(error)
      return invalid([], `failed to parse TOML: ${detail}`)
    }
  })

/**
 * Parses and validates a deployment TOML document.
 *
 * API keys are read through `Config.redacted(api_key_env)` from the current `ConfigProvider`
 * (the environment by default) and stay `Redacted`. Clients and targets come out sorted by table
 * name, routes by route id. Without a `[sessions]` table, `sessions` holds the defaults
 * (`store = "memory"`, `max_entries = 100000`, `ttl_ms = 3600000`).
 *
 * Fails with `InvalidConfig` for the first problem found: `failed to parse TOML: ...` (path `""`)
 * for syntax errors, otherwise at the TOML key path of the offending value.
 */
export const parse: (text: string) => Effect.Effect<Deployment, InvalidConfig> = Effect.fn("DeploymentToml.parse")(
  function*(text: string) {
    const raw = yield* decodeStructure(yield* parseToml(text))
    yield* checkNames(raw)
    const clients = yield* Effect.forEach(raw.clients, buildClient)
    const clientsByName = byName(clients)
    const targets = yield* Effect.forEach(raw.targets, (target) => buildTarget(clientsByName, target))
    const targetsByName = byName(targets)
    yield* checkDuplicateIds(raw.routes)
    const routes = yield* Effect.forEach(raw.routes, (route) => buildRoute(targetsByName, route))
    yield* Effect.forEach(routes, checkForwardFamilies, { discard: true })
    const sessions = yield* buildSessions(raw.sessions)
    const server = yield* buildServer(raw.server, clients)
    return {
      clients,
      targets,
      routes: Arr.sort(routes, Order.mapInput(Order.string, (route: RouteSpec) => route.id)),
      sessions,
      server
    }
  }
)

/** The targets a `subagents` table may call. */
const subagentTargets = (subagents: Option.Option<SubagentsSpec>): ReadonlyArray<Target> =>
  Option.match(subagents, {
    onNone: () => [],
    onSome: (table) =>
      table.type === "passthrough" ? [table.target] : [table.judge, ...table.targets, table.defaultTarget]
  })

/** Every target a route's requests may call: answer targets, judges, the advisor, sub-agent targets. */
const callableTargets = (route: RouteSpec): ReadonlyArray<Target> => {
  switch (route.type) {
    case "noop":
      return []
    case "passthrough":
      return [route.target, ...subagentTargets(route.subagents)]
    case "random":
      return route.targets
    case "llm_classifier":
      return route.mode === "custom"
        ? [route.judge, ...route.targets, route.defaultTarget]
        : [route.judge, route.weak, route.strong]
    case "stage_router":
      return [
        route.capable,
        route.efficient,
        ...Option.match(route.classifier, { onNone: () => [], onSome: (classifier) => [classifier.judge] }),
        ...subagentTargets(route.subagents)
      ]
    case "advisor":
      return [route.executor, route.advisor]
  }
}

/** The credential families of a route's `forward_auth` callable targets, without repeats, in target order. */
const forwardFamilies = (route: RouteSpec): ReadonlyArray<CredentialFamily> =>
  Arr.dedupe(
    callableTargets(route).flatMap((target) =>
      target.client.forwardAuth === true ? [credentialFamily(target.client.format)] : []
    )
  )

/**
 * A route may forward the caller's credential to clients of one family only (Anthropic, or the
 * OpenAI formats): a caller carries one kind of credential.
 */
const checkForwardFamilies = (route: RouteSpec): Effect.Effect<void, InvalidConfig> =>
  forwardFamilies(route).length > 1
    ? fail(["routes", route.name], `route ${route.name} cannot forward both Anthropic and OpenAI caller credentials`)
    : Effect.void

/**
 * The family of caller credential `route` forwards: that of the `forward_auth` clients among its
 * callable targets (answer targets, judges, the advisor, sub-agent targets); none when no client
 * of them forwards. A parsed deployment has one family at most per route (a load error
 * otherwise); for a hand-built one with both, the first callable target's family.
 */
export const forwardAuthFamily = (route: RouteSpec): Option.Option<CredentialFamily> => Arr.head(forwardFamilies(route))

/** The `--dry-run` line: `server OK: <route ids joined by ", ">`, in the deployment's route order. */
export const summary = (deployment: Deployment): string =>
  `server OK: ${deployment.routes.map((route) => route.id).join(", ")}`

/** The warning of a judge bounded neither by its client's `timeout_ms`, `judge_timeout_ms` nor `request_timeout_ms`. */
const unboundedJudge = (
  route: RouteCommon,
  judged: { readonly judge: Target; readonly judgeTimeoutMs: Option.Option<number> },
  where = ""
): ReadonlyArray<string> =>
  Option.isNone(judged.judge.client.timeoutMs) && Option.isNone(judged.judgeTimeoutMs) &&
    Option.isNone(route.requestTimeoutMs)
    ? [
      `route ${route.name}: ${where}judge client ${judged.judge.client.name} has no timeout_ms; ` +
      "a stalled judge holds requests until the peer closes the connection"
    ]
    : []

/** `unboundedJudge` for a route's custom `subagents` classifier (`route <n>: subagents judge client ...`). */
const unboundedSubagentsJudge = (
  route: RouteCommon & { readonly subagents: Option.Option<SubagentsSpec> }
): ReadonlyArray<string> =>
  Option.match(route.subagents, {
    onNone: () => [],
    onSome: (subagents) => subagents.type === "llm_classifier" ? unboundedJudge(route, subagents, "subagents ") : []
  })

/**
 * Non-fatal findings about a valid deployment, one line each, for the startup log and `--dry-run`,
 * in the deployment's route order: one per `llm_classifier` route (or `stage_router` route with a
 * `[classifier]`) whose judge's LLM client has no `timeout_ms` and which bounds its judge neither by
 * `judge_timeout_ms` nor by `request_timeout_ms` (`route <table name>: judge client <client name>
 * has no timeout_ms; ...`), the same for a passthrough or stage router route's custom `subagents`
 * classifier (`route <n>: subagents judge client ...`, after the route's own lines), one per
 * `stage_router` route with `picker = "capable_first"` (experimental), and one per `advisor` route whose advisor's client has
 * no `timeout_ms` and which has no `request_timeout_ms`.
 */
export const warnings = (deployment: Deployment): ReadonlyArray<string> =>
  deployment.routes.flatMap((route): ReadonlyArray<string> => {
    switch (route.type) {
      case "llm_classifier":
        return unboundedJudge(route, route)
      case "passthrough":
        return unboundedSubagentsJudge(route)
      case "stage_router":
        return [
          ...(route.picker === "capable_first"
            ? [
              `route ${route.name}: picker "capable_first" is experimental: the compatible system's published ` +
              "thresholds and results all come from \"efficient_first\", so no confidence_threshold is calibrated for it"
            ]
            : []),
          ...Option.match(route.classifier, {
            onNone: () => [],
            onSome: (classifier) => unboundedJudge(route, classifier)
          }),
          ...unboundedSubagentsJudge(route)
        ]
      case "advisor":
        return Option.isNone(route.advisor.client.timeoutMs) && Option.isNone(route.requestTimeoutMs)
          ? [
            `route ${route.name}: advisor client ${route.advisor.client.name} has no timeout_ms; ` +
            "a stalled advisor holds requests until the peer closes the connection"
          ]
          : []
      default:
        return []
    }
  })
