/**
 * What a route reads from a conversation: whether the request is a user turn, the judge's view of
 * the conversation (client system prompts never shown), and the message-hash session identity.
 */
import type { Message } from "@switchyard-ts/protocol/OpenAiChat"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

const isInstruction = (message: Message): boolean => message.role === "system" || message.role === "developer"

/**
 * A request is a user turn when its last non-system message has role `user`; otherwise (a tool
 * result or an assistant turn last, or no message) it is a continuation.
 */
export const isUserTurn = (messages: ReadonlyArray<Message>): boolean => {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]
    if (message === undefined || isInstruction(message)) continue
    return message.role === "user"
  }
  return false
}

/** The visible text of a message's content (non-text parts become short placeholders). */
export const textOf = (message: Message): string => {
  const content = message.content
  if (content === undefined || content === null) return ""
  if (typeof content === "string") return content
  return content
    .map((part) => {
      switch (part.type) {
        case "text":
          return "text" in part ? part.text : ""
        case "refusal":
          return "refusal" in part ? part.refusal : ""
        case "image_url":
          return "[image]"
        case "input_audio":
          return "[audio]"
        case "file":
          return "[file]"
        default:
          return `[${part.type}]`
      }
    })
    .join("\n")
}

/** Longest text of one message shown to the judge; longer texts keep their head and tail. */
export const maxMessageChars = 12_000

const clip = (text: string): string => {
  if (text.length <= maxMessageChars) return text
  const head = Math.floor((maxMessageChars * 2) / 3)
  const tail = maxMessageChars - head
  return `${text.slice(0, head)}\n[… ${text.length - maxMessageChars} characters omitted …]\n${
    text.slice(text.length - tail)
  }`
}

const render = (message: Message): string => {
  switch (message.role) {
    case "assistant": {
      const calls = (message.tool_calls ?? []).map((call) =>
        call.type === "function"
          ? `[assistant calls ${call.function.name}] ${call.function.arguments}`
          : `[assistant calls ${call.custom.name}] ${call.custom.input}`
      )
      const text = textOf(message)
      return clip([...(text === "" ? [] : [`[assistant] ${text}`]), ...calls].join("\n"))
    }
    case "tool":
      return clip(`[tool result ${message.tool_call_id}] ${textOf(message)}`)
    case "function":
      return clip(`[function result ${message.name}] ${textOf(message)}`)
    default:
      return clip(`[${message.role}] ${textOf(message)}`)
  }
}

/**
 * Index of the first kept message of a trailing window of `size` messages over `visible`, moved
 * earlier so that every kept tool result keeps the assistant message that made its call.
 */
const windowStart = (visible: ReadonlyArray<Message>, from: number, size: number): number => {
  let start = Math.max(from, visible.length - size)
  const needed = new Set<string>()
  for (let i = visible.length - 1; i >= from; i--) {
    const message = visible[i]
    if (message === undefined) continue
    if (message.role === "tool" && i >= start) needed.add(message.tool_call_id)
    if (message.role === "assistant" && message.tool_calls !== undefined) {
      const answersNeeded = message.tool_calls.some((call) => needed.has(call.id))
      for (const call of message.tool_calls) needed.delete(call.id)
      if (answersNeeded && i < start) start = i
    }
  }
  return start
}

/**
 * The conversation as the judge sees it, as text: the opening user task, then either the latest
 * user message (when `recentTurnWindow` is unset) or the trailing `recentTurnWindow` messages after
 * the task (a tool result keeps the call that introduced it). System and developer messages are
 * never included.
 */
export const judgeView = (messages: ReadonlyArray<Message>, recentTurnWindow: Option.Option<number>): string => {
  const visible = messages.filter((message) => !isInstruction(message))
  const first = visible.findIndex((message) => message.role === "user")
  const task = visible[first]
  if (task === undefined) return "## Task\n(the conversation has no user message)"
  const sections = [`## Task (first user message)\n${clip(textOf(task))}`]
  Option.match(recentTurnWindow, {
    onNone: () => {
      let last = -1
      for (let i = visible.length - 1; i > first; i--) {
        if (visible[i]?.role === "user") {
          last = i
          break
        }
      }
      const latest = visible[last]
      if (latest !== undefined) sections.push(`## Latest user message\n${clip(textOf(latest))}`)
    },
    onSome: (size) => {
      if (size <= 0) return
      const start = windowStart(visible, first + 1, size)
      const recent = visible.slice(start).map(render)
      if (recent.length > 0) sections.push(`## Recent conversation (oldest first)\n${recent.join("\n\n")}`)
    }
  })
  return sections.join("\n\n")
}

/** The concatenated text parts of the first user message, when it has any text. */
export const firstUserText = (messages: ReadonlyArray<Message>): Option.Option<string> => {
  const first = messages.find((message) => message.role === "user")
  if (first === undefined) return Option.none()
  const text = typeof first.content === "string"
    ? first.content
    : first.content.flatMap((part) => (part.type === "text" && "text" in part ? [part.text] : [])).join("")
  return text === "" ? Option.none() : Option.some(text)
}

const hex = (bytes: ArrayBuffer): string =>
  Array.from(new Uint8Array(bytes).subarray(0, 16), (byte) => byte.toString(16).padStart(2, "0")).join("")

/**
 * The message-hash session identity: the first 128 bits of SHA-256 over the first user message's
 * text, in hex. Different sessions opening with the same text share it.
 */
export const messageHash = (messages: ReadonlyArray<Message>): Effect.Effect<Option.Option<string>> =>
  Option.match(firstUserText(messages), {
    onNone: () => Effect.succeedNone,
    onSome: (text) =>
      Effect.map(
        Effect.promise(() => globalThis.crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))),
        (digest) => Option.some(hex(digest))
      )
  })
