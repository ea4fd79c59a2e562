/**
 * Responses tool-name flattening and custom tools, for Chat and Messages upstreams that know
 * neither namespaces nor free-form tools: the flat name of a namespaced tool and its way back
 * ({@link ToolMap}), and the `{"input": <text>}` encoding of custom tool calls.
 */
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import type * as N from "../../Neutral.js"
import * as R from "../../OpenAiResponses.js"
import type { JsonObject } from "./shared.js"

const isNamespaceTool = Schema.is(R.NamespaceTool)
const isAdditionalToolsItem = Schema.is(R.AdditionalToolsItem)

/** The longest tool name both Chat (`^[a-zA-Z0-9_-]{1,64}$`) and Messages (at most 128) accept. */
export const maxToolNameLength = 64

/** The tool names Chat and Messages both accept. */
export const portableToolName: RegExp = /^[a-zA-Z0-9_-]{1,64}$/

/** What joins a namespace and a tool name in a flattened name. */
export const namespaceSeparator = "__"

/** FNV-1a (32 bit) of `text`, 7 base-36 digits. */
const shortHash = (text: string): string => {
  let hash = 0x811c9dc5
  for (const char of text) {
    hash ^= char.codePointAt(0) ?? 0
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return hash.toString(36).padStart(7, "0")
}

/**
 * The name a tool of a Responses `namespace` gets for Chat and Messages upstreams (and in the
 * neutral form): `<namespace>__<name>` when that matches {@link portableToolName}, otherwise that
 * text with every other character replaced by `_`, cut so that `_` and a 7-character hash of the
 * pair fit in {@link maxToolNameLength}. Pure, so a response can be mapped back with the request
 * alone ({@link originalToolName}); `fromResponsesRequest` fails if a flattened name collides with
 * another tool's name.
 */
export const flatToolName = (namespace: string, name: string): string => {
  const plain = `${namespace}${namespaceSeparator}${name}`
  if (portableToolName.test(plain)) return plain
  const hash = shortHash(`${namespace}\u0000${name}`)
  const safe = plain.replace(/[^a-zA-Z0-9_-]/g, "_")
  return `${safe.slice(0, maxToolNameLength - hash.length - 1)}_${hash}`
}

/**
 * The namespace and name a flattened tool name stands for in the Responses request `request`
 * (none for a name no namespace tool of `request` produced), its `tools` or its
 * `additional_tools` items.
 */
export const originalToolName = (request: R.ResponsesRequest, flatName: string): Option.Option<N.NamespacedName> => {
  const items = Predicate.isString(request.input) ? [] : request.input ?? []
  const declared = [
    ...(request.tools ?? []),
    ...items.flatMap((item) => isAdditionalToolsItem(item) ? item.tools : [])
  ]
  for (const tool of declared) {
    if (!isNamespaceTool(tool)) continue
    for (const child of tool.tools) {
      if (flatToolName(tool.name, child.name) === flatName) {
        return Option.some({ namespace: tool.name, name: child.name })
      }
    }
  }
  return Option.none()
}

/**
 * What a Responses client needs to read a call of another format's upstream: the flattened names
 * of its namespace tools and the names of its custom tools (names as the upstream sees them).
 */
export interface ToolMap {
  readonly namespaced: ReadonlyMap<string, N.NamespacedName>
  readonly custom: ReadonlySet<string>
}

/** The {@link ToolMap} of a neutral request (empty unless it came from Responses). */
export const toolMap = (request: N.NeutralRequest): ToolMap => {
  const namespaced = new Map<string, N.NamespacedName>()
  const custom = new Set<string>()
  for (const tool of request.tools) {
    if (tool.namespaced !== undefined) {
      namespaced.set(tool.name, { namespace: tool.namespaced.namespace, name: tool.namespaced.name })
    }
    if (tool.custom !== undefined) custom.add(tool.name)
  }
  return { namespaced, custom }
}

/** The {@link ToolMap} with no namespaced and no custom tools. */
export const emptyToolMap: ToolMap = { namespaced: new Map(), custom: new Set() }

/** The JSON Schema a custom (free-form) tool is offered with to Chat and Messages: one string `input`. */
export const customToolParameters: JsonObject = {
  type: "object",
  properties: { input: { type: "string", description: "The complete tool input, verbatim." } },
  required: ["input"],
  additionalProperties: false
}

/** The free-form input of a custom tool call from its neutral `input` (or, failing that, its arguments text). */
export const customInput = (input: unknown, args: string | undefined): string => {
  if (Predicate.isRecord(input)) {
    const value = input["input"]
    if (Predicate.isString(value)) return value
    const values = Object.values(input)
    const only = values[0]
    if (values.length === 1 && Predicate.isString(only)) return only
  }
  if (Predicate.isString(input)) return input
  return args ?? JSON.stringify(input ?? {})
}

/** A neutral ToolUse of a custom tool call: `input` is `{"input": <text>}`, `arguments` its JSON. */
export const customToolUse = (
  callId: string,
  name: string,
  input: string,
  extra: { readonly namespaced?: N.NamespacedName; readonly itemId?: string }
): N.ToolUse => ({
  _tag: "ToolUse",
  id: callId,
  name,
  input: { input },
  arguments: JSON.stringify({ input }),
  custom: true,
  ...extra
})

/** A call's neutral `name` (flattened when it has a namespace) and its `namespaced` origin. */
export const namespacedOf = (namespace: string | undefined, name: string) =>
  namespace !== undefined ? { name: flatToolName(namespace, name), namespaced: { namespace, name } } : { name }
