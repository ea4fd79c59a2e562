import { assert, describe, it } from "@effect/vitest"
import type { Message } from "@switchyard-ts/protocol/OpenAiChat"
import * as Conversation from "@switchyard-ts/routing/Conversation"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

const system = (content: string): Message => ({ role: "system", content })
const developer = (content: string): Message => ({ role: "developer", content })
const user = (content: string): Message => ({ role: "user", content })
const assistant = (content: string): Message => ({ role: "assistant", content })
const call = (id: string, name: string, args: string): Message => ({
  role: "assistant",
  content: null,
  tool_calls: [{ id, type: "function", function: { name, arguments: args } }]
})
const tool = (id: string, content: string): Message => ({ role: "tool", tool_call_id: id, content })

describe("Conversation.isUserTurn", () => {
  const cases: ReadonlyArray<readonly [string, ReadonlyArray<Message>, boolean]> = [
    ["user last", [system("s"), user("do it")], true],
    ["user after a tool exchange", [user("a"), call("c1", "ls", "{}"), tool("c1", "x"), user("b")], true],
    ["tool result last", [user("a"), call("c1", "ls", "{}"), tool("c1", "x")], false],
    ["assistant last", [user("a"), assistant("done")], false],
    ["assistant tool call last", [user("a"), call("c1", "ls", "{}")], false],
    ["system after the user message is ignored", [user("a"), system("late instruction")], true],
    ["developer after the user message is ignored", [user("a"), developer("late"), system("later")], true],
    ["system after a tool result is ignored", [user("a"), call("c1", "ls", "{}"), tool("c1", "x"), system("s")], false],
    ["only system messages", [system("s")], false],
    ["no messages", [], false]
  ]
  for (const [label, messages, expected] of cases) {
    it(label, () => {
      assert.strictEqual(Conversation.isUserTurn(messages), expected)
    })
  }
})

describe("Conversation.judgeView", () => {
  const conversation: ReadonlyArray<Message> = [
    system("SYSTEM-SECRET-PROMPT"),
    developer("DEVELOPER-SECRET-NOTE"),
    user("TASK: fix the failing build"),
    call("call-1", "run_tests", "{\"path\":\"src\"}"),
    tool("call-1", "TOOL-OUTPUT-1: 3 failures"),
    user("MIDDLE: also check lint"),
    assistant("ASSISTANT-REPLY: lint is clean"),
    system("SYSTEM-LATE-REMINDER"),
    call("call-2", "read_file", "{\"path\":\"a.ts\"}"),
    tool("call-2", "TOOL-OUTPUT-2: file body"),
    user("LATEST: now update the changelog")
  ]

  const windows: ReadonlyArray<Option.Option<number>> = [
    Option.none(),
    Option.some(0),
    Option.some(1),
    Option.some(3),
    Option.some(100)
  ]

  it("never shows system or developer text, under any window", () => {
    for (const window of windows) {
      const view = Conversation.judgeView(conversation, window)
      for (
        const secret of [
          "SYSTEM-SECRET-PROMPT",
          "DEVELOPER-SECRET-NOTE",
          "SYSTEM-LATE-REMINDER",
          "[system]",
          "[developer]"
        ]
      ) {
        assert.notInclude(view, secret, `window ${String(window)}`)
      }
      assert.include(view, "TASK: fix the failing build")
    }
  })

  it("with the window unset: the task and the latest user message, nothing in between", () => {
    const view = Conversation.judgeView(conversation, Option.none())
    assert.include(view, "TASK: fix the failing build")
    assert.include(view, "LATEST: now update the changelog")
    for (const hidden of ["MIDDLE", "ASSISTANT-REPLY", "TOOL-OUTPUT-1", "TOOL-OUTPUT-2", "run_tests", "read_file"]) {
      assert.notInclude(view, hidden)
    }
    assert.isBelow(view.indexOf("TASK:"), view.indexOf("LATEST:"))
  })

  it("with the window unset and a single user message, only the task", () => {
    const view = Conversation.judgeView([system("S"), user("ONLY-TASK"), assistant("A-REPLY")], Option.none())
    assert.include(view, "ONLY-TASK")
    assert.notInclude(view, "A-REPLY")
    assert.strictEqual(view.split("ONLY-TASK").length, 2, "the task is shown once")
  })

  it("window 0 shows the task only", () => {
    const view = Conversation.judgeView(conversation, Option.some(0))
    assert.include(view, "TASK: fix the failing build")
    for (const hidden of ["MIDDLE", "LATEST", "ASSISTANT-REPLY", "TOOL-OUTPUT", "run_tests", "read_file"]) {
      assert.notInclude(view, hidden)
    }
  })

  it("a trailing window keeps the assistant call of a kept tool result", () => {
    // The last two visible messages are the tool result of call-2 and the latest user message;
    // call-2's assistant message must come along.
    const view = Conversation.judgeView(conversation, Option.some(2))
    assert.include(view, "TOOL-OUTPUT-2")
    assert.include(view, "read_file")
    assert.include(view, "LATEST: now update the changelog")
    assert.isBelow(view.indexOf("read_file"), view.indexOf("TOOL-OUTPUT-2"))
    for (const hidden of ["MIDDLE", "ASSISTANT-REPLY", "TOOL-OUTPUT-1", "run_tests"]) {
      assert.notInclude(view, hidden)
    }
  })

  it("a window that starts at a tool result pulls in its call only", () => {
    const messages: ReadonlyArray<Message> = [
      user("TASK"),
      assistant("EARLY-ANSWER"),
      call("c9", "grep_tree", "{}"),
      tool("c9", "GREP-RESULT")
    ]
    const view = Conversation.judgeView(messages, Option.some(1))
    assert.include(view, "GREP-RESULT")
    assert.include(view, "grep_tree")
    assert.notInclude(view, "EARLY-ANSWER")
  })

  it("a large window shows every visible message once, in order", () => {
    const view = Conversation.judgeView(conversation, Option.some(100))
    const order = [
      "TASK:",
      "run_tests",
      "TOOL-OUTPUT-1",
      "MIDDLE",
      "ASSISTANT-REPLY",
      "read_file",
      "TOOL-OUTPUT-2",
      "LATEST"
    ]
    const positions = order.map((marker) => view.indexOf(marker))
    for (const [i, position] of positions.entries()) assert.isAtLeast(position, 0, order[i])
    assert.deepStrictEqual([...positions].sort((a, b) => a - b), positions)
    assert.strictEqual(view.split("TASK: fix the failing build").length, 2, "the task is not repeated")
  })

  it("Claude Code's shape: system messages after the task and between a call and its result are skipped, not counted", () => {
    // [user, system] (a first request) shows the task alone.
    const first = Conversation.judgeView([user("CC-TASK"), system("CC-REMINDER-1")], Option.some(3))
    assert.include(first, "CC-TASK")
    assert.notInclude(first, "CC-REMINDER")
    assert.notInclude(first, "Recent conversation")
    // A window of 1 over [..., call, system, result, system] keeps the result and pulls in its call.
    const messages: ReadonlyArray<Message> = [
      user("CC-TASK"),
      system("CC-REMINDER-1"),
      call("c1", "Bash", "{\"command\":\"npm test\"}"),
      system("CC-REMINDER-2"),
      tool("c1", "CC-RESULT"),
      system("CC-REMINDER-3")
    ]
    const view = Conversation.judgeView(messages, Option.some(1))
    assert.include(view, "CC-RESULT")
    assert.include(view, "[assistant calls Bash]")
    assert.notInclude(view, "CC-REMINDER")
    assert.isFalse(Conversation.isUserTurn(messages))
  })

  it("a conversation without a user message says so", () => {
    const view = Conversation.judgeView([system("S-ONLY"), assistant("A")], Option.none())
    assert.notInclude(view, "S-ONLY")
    assert.include(view, "no user message")
  })
})

describe("Conversation.messageHash", () => {
  it.effect("the same opening text gives the same hash, whatever follows", () =>
    Effect.gen(function*() {
      const a = yield* Conversation.messageHash([system("one"), user("open the file"), assistant("ok")])
      const b = yield* Conversation.messageHash([
        user("open the file"),
        call("c", "x", "{}"),
        tool("c", "y"),
        user("more")
      ])
      assert.isTrue(Option.isSome(a))
      assert.deepStrictEqual(a, b)
      assert.match(Option.getOrElse(a, () => ""), /^[0-9a-f]{32}$/)
    }))

  it.effect("different opening text gives a different hash", () =>
    Effect.gen(function*() {
      const a = yield* Conversation.messageHash([user("open the file")])
      const b = yield* Conversation.messageHash([user("open the file!")])
      assert.isTrue(Option.isSome(a) && Option.isSome(b))
      assert.notDeepEqual(a, b)
    }))

  it.effect("text parts count as text; no text gives no hash", () =>
    Effect.gen(function*() {
      const parts = yield* Conversation.messageHash([{
        role: "user",
        content: [{ type: "text", text: "open the file" }]
      }])
      const plain = yield* Conversation.messageHash([user("open the file")])
      assert.deepStrictEqual(parts, plain)
      assert.isTrue(Option.isNone(yield* Conversation.messageHash([])))
      assert.isTrue(Option.isNone(yield* Conversation.messageHash([system("only a system prompt")])))
      assert.isTrue(Option.isNone(yield* Conversation.messageHash([user("")])))
      assert.isTrue(
        Option.isNone(
          yield* Conversation.messageHash([{
            role: "user",
            content: [{ type: "image_url", image_url: { url: "https://x/y.png" } }]
          }])
        )
      )
    }))
})
