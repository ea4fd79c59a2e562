/**
 * The route capability flags `reasoning`, `tool_calling` and `vision` (docs/routes.md): a flag set
 * to `false` refuses, before any upstream call, a request that uses that input. The rule reads the
 * body the caller sent — its own Messages or Responses body when it came in one, else the chat
 * body — as it was decoded (unknown fields kept), once, and only when some flag is `false`.
 */
import { type Capability, UnsupportedCapability } from "@switchyard-ts/protocol/Errors"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import type { Route, RoutedRequest } from "./Route.js"

/** The three flags of a route; none (unset) or `true` never restricts. */
export interface Flags {
  readonly reasoning: Option.Option<boolean>
  readonly toolCalling: Option.Option<boolean>
  readonly vision: Option.Option<boolean>
}

const disabled = (flag: Option.Option<boolean> | undefined): boolean =>
  flag !== undefined && Option.isSome(flag) && !flag.value

const present = (value: unknown): boolean => value !== undefined && value !== null

/** Top-level keys whose non-null value is a reasoning control. */
const reasoningKeys = ["reasoning", "reasoning_effort", "thinking"] as const
/** Top-level keys whose non-empty array offers tools. */
const toolListKeys = ["tools", "functions"] as const
/** Top-level keys whose non-null value is a tool control. */
const toolControlKeys = ["tool_choice", "parallel_tool_calls", "function_call"] as const
/** Top-level keys holding conversation content, walked for tool history and images. */
const contentKeys = ["messages", "input", "system"] as const

/** Content item types that are images. */
const imageTypes: ReadonlySet<string> = new Set(["image", "image_url", "input_image", "computer_screenshot"])
/** Content item types that are tool history or tool offers, besides the `*_call…` / `*_tool_…` families. */
const toolTypes: ReadonlySet<string> = new Set([
  "additional_tools",
  "tool_use",
  "tool_result",
  "mcp_list_tools",
  "mcp_approval_request",
  "mcp_approval_response"
])

const isToolType = (kind: string): boolean =>
  toolTypes.has(kind) || kind.endsWith("_call") || kind.endsWith("_call_output") || kind.endsWith("_tool_use") ||
  kind.endsWith("_tool_result")

/** A Chat message that is tool history: a tool or function result, or an assistant message calling tools. */
const isChatToolHistory = (item: Readonly<Record<string, unknown>>): boolean =>
  item["role"] === "tool" || item["role"] === "function" ||
  (Array.isArray(item["tool_calls"]) && item["tool_calls"].length > 0) || present(item["function_call"])

const usesReasoning = (body: Readonly<Record<string, unknown>>): boolean => {
  if (reasoningKeys.some((key) => present(body[key]))) return true
  const config = body["output_config"]
  return Predicate.isRecord(config) && present(config["effort"])
}

const offersTools = (body: Readonly<Record<string, unknown>>): boolean =>
  toolListKeys.some((key) => {
    const list = body[key]
    return Array.isArray(list) && list.length > 0
  }) || toolControlKeys.some((key) => present(body[key]))

/**
 * What the conversation content uses: tool history and images, found by walking `messages`,
 * `input` and `system`, each item's `content` and a `*_call_output` item's `output` (so images
 * inside tool results count). Tool arguments and text are never looked into.
 */
const contentUses = (
  body: Readonly<Record<string, unknown>>,
  lookFor: { readonly tools: boolean; readonly images: boolean }
): { readonly tools: boolean; readonly images: boolean } => {
  const pending: Array<unknown> = contentKeys.map((key) => body[key]).filter(present)
  let images = false
  while (pending.length > 0) {
    const value = pending.pop()
    if (Array.isArray(value)) {
      for (const item of value) pending.push(item)
      continue
    }
    if (!Predicate.isRecord(value)) continue
    const kind = typeof value["type"] === "string" ? value["type"] : ""
    if (lookFor.tools && (isToolType(kind) || isChatToolHistory(value))) return { tools: true, images }
    if (lookFor.images && imageTypes.has(kind)) {
      if (!lookFor.tools) return { tools: false, images: true }
      images = true
    }
    if (present(value["content"])) pending.push(value["content"])
    if (kind.endsWith("_call_output") && present(value["output"])) pending.push(value["output"])
  }
  return { tools: false, images }
}

/**
 * The first capability `flags` disable that `body` uses, checked in the order reasoning,
 * tool_calling, vision:
 * - reasoning: a non-null `reasoning`, `reasoning_effort`, `thinking` or `output_config.effort`;
 * - tool_calling: a non-empty `tools` or `functions`, a non-null `tool_choice`,
 *   `parallel_tool_calls` or `function_call`, or tool history in the content (`tool_use`,
 *   `tool_result`, `*_call`, `*_call_output`, MCP list and approval items, `additional_tools`, Chat
 *   `tool` / `function` messages and assistant `tool_calls`);
 * - vision: an `image`, `image_url`, `input_image` or `computer_screenshot` item anywhere in the
 *   content, inside tool results included.
 * None when no flag is `false` (the body is then not read at all) or nothing disabled is used.
 */
export const firstUnsupported = (flags: Flags, body: Readonly<Record<string, unknown>>): Option.Option<Capability> => {
  const noTools = disabled(flags.toolCalling)
  const noImages = disabled(flags.vision)
  if (disabled(flags.reasoning) && usesReasoning(body)) return Option.some("reasoning")
  if (noTools && offersTools(body)) return Option.some("tool_calling")
  if (!noTools && !noImages) return Option.none()
  const uses = contentUses(body, { tools: noTools, images: noImages })
  if (uses.tools) return Option.some("tool_calling")
  return uses.images ? Option.some("vision") : Option.none()
}

/**
 * Why `route` refuses `request` (`UnsupportedCapability`, 400): the first capability its flags
 * disable that the body the caller sent uses ({@link firstUnsupported}). None for a route with no
 * flag set to `false`.
 */
export const refusal = (route: Route, request: RoutedRequest): Option.Option<UnsupportedCapability> => {
  const flags: Flags = {
    reasoning: route.reasoning ?? Option.none(),
    toolCalling: route.toolCalling,
    vision: route.vision ?? Option.none()
  }
  return Option.map(
    firstUnsupported(flags, request.native?.body ?? request.body),
    (capability) => new UnsupportedCapability({ route: route.id, capability })
  )
}
