/**
 * Which table an `llm_classifier` table is, settled before its keys are decoded: an explicit
 * `mode`, else `escalation` when an `escalation` table is present, else `capability` — and the
 * keys each mode cannot use, named by their path (`mode custom cannot use capability or
 * escalation fields`).
 */
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { failAt, TomlString, unknownVariant } from "../../tables/Toml.js"

/** The keys that settle a classifier's mode, read (ignoring every other key) before its own keys. */
const Head = Schema.Struct({
  mode: Schema.optional(TomlString),
  escalation: Schema.optional(Schema.Unknown),
  targets: Schema.optional(Schema.Unknown),
  models: Schema.optional(Schema.Unknown),
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
type Head = typeof Head.Type

/** The modes of an `llm_classifier` table. */
export const modes = ["capability", "escalation", "custom"] as const
const customFields = ["targets", "models", "default_target", "response_schema", "policy"] as const
const capabilityOrEscalationFields = [
  "strong_target",
  "weak_target",
  "base_threshold",
  "threshold_step",
  "escalation"
] as const
/** Capability routing settings an escalation route cannot use (`base_threshold` is ignored when the mode is implicit). */
const capabilityRoutingSettings = [
  "base_threshold",
  "threshold_step",
  "message_hash_fallback",
  "recent_turn_window"
] as const

/** The first of `fields` that `head` sets, failing with `message` at its path. */
const rejectAny = (head: Head, fields: ReadonlyArray<keyof Head>, message: string) =>
  Effect.forEach(fields, (field) => head[field] === undefined ? Effect.void : failAt([field], message), {
    discard: true
  })

/** Reads the head of `table`; a `mode` that is not a string, or not a mode, fails at `mode`. */
const headOf = (table: unknown) =>
  Effect.gen(function*() {
    const head = yield* ParseResult.decodeUnknown(Head, { onExcessProperty: "ignore" })(table)
    if (head.mode !== undefined && !Arr.contains(modes, head.mode)) {
      return yield* failAt(["mode"], unknownVariant(head.mode, modes))
    }
    return head
  })

/** A custom classifier (route or `subagents`) rejects capability and escalation keys. */
const rejectCapabilityFields = (head: Head) =>
  Effect.gen(function*() {
    yield* rejectAny(head, capabilityOrEscalationFields, "mode custom cannot use capability or escalation fields")
    if (typeof head.response_format_type === "string" && head.response_format_type !== "json_schema") {
      return yield* failAt(["response_format_type"], "mode custom cannot use capability or escalation fields")
    }
  })

/** The table an `llm_classifier` route is. */
export type Mode = "capability" | "custom" | "escalation"

/**
 * Settles a classifier route's mode and rejects what the mode cannot use: an escalation route
 * rejects custom keys and capability routing settings (`base_threshold` only when the mode is
 * explicit), a capability route the escalation table and custom keys, a custom route capability and
 * escalation keys. Issues are relative to the route table.
 */
export const settleRoute = (table: unknown): Effect.Effect<Mode, ParseResult.ParseIssue> =>
  Effect.gen(function*() {
    const head = yield* headOf(table)
    if (head.mode === "custom") {
      yield* rejectCapabilityFields(head)
      return "custom"
    }
    const explicit = head.mode === "escalation"
    if (explicit && head.escalation === undefined) {
      return yield* failAt(["escalation"], "mode escalation requires an escalation table")
    }
    if (head.mode === "capability" && head.escalation !== undefined) {
      return yield* failAt(["escalation"], "mode capability cannot use escalation")
    }
    if (head.escalation !== undefined) {
      yield* rejectAny(head, customFields, "mode escalation cannot use custom classifier fields")
      const settings = explicit
        ? capabilityRoutingSettings
        : capabilityRoutingSettings.filter((field) => field !== "base_threshold")
      yield* rejectAny(head, settings, "mode escalation cannot use capability routing settings")
      return "escalation"
    }
    yield* rejectAny(head, customFields, "mode capability cannot use custom classifier fields")
    return "capability"
  })

/**
 * A `subagents` classifier's mode must be `custom` (`subagents llm_classifier only supports mode
 * custom`), and its table rejects capability and escalation keys.
 */
export const settleSubagents = (table: unknown): Effect.Effect<void, ParseResult.ParseIssue> =>
  Effect.gen(function*() {
    const head = yield* headOf(table)
    if (head.mode !== "custom") {
      return yield* failAt(["mode"], "subagents llm_classifier only supports mode custom")
    }
    yield* rejectCapabilityFields(head)
  })
