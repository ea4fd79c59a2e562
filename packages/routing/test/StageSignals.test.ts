import { assert, describe, it } from "@effect/vitest"
import type { Message } from "@switchyard-ts/protocol/OpenAiChat"
import * as StageSignals from "@switchyard-ts/routing/StageSignals"

/** A conversation of `calls` (tool name, arguments JSON, result text), after a user task. */
const agent = (calls: ReadonlyArray<readonly [string, string, string]>, padding = 0): ReadonlyArray<Message> => [
  { role: "system", content: "CLIENT" },
  { role: "user", content: "fix the build" },
  ...Array.from({ length: padding }, (_, i): Message => ({ role: "assistant", content: `thinking ${i}` })),
  ...calls.flatMap(([name, args, result], i): ReadonlyArray<Message> => [
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id: `c${i}`, type: "function", function: { name, arguments: args } }]
    },
    { role: "tool", tool_call_id: `c${i}`, content: result }
  ])
]

const shell = (command: string) => JSON.stringify({ command })

describe("StageSignals", () => {
  it("failure severities: critical, hard, soft, clean", () => {
    assert.strictEqual(StageSignals.severityOf("MemoryError: cannot allocate"), 1)
    assert.strictEqual(StageSignals.severityOf("connect ECONNREFUSED 127.0.0.1:5432"), 1)
    assert.strictEqual(StageSignals.severityOf("Traceback (most recent call last):\n  File x"), 0.7)
    assert.strictEqual(StageSignals.severityOf("bash: rg: command not found"), 0.7)
    assert.strictEqual(StageSignals.severityOf("process exited with code 3"), 0.3)
    assert.strictEqual(StageSignals.severityOf("all good"), 0)
  })

  it("test passes: a pass phrase without failure phrases or a non-zero failure count", () => {
    assert.isTrue(StageSignals.reportsPass("===== 12 passed in 0.31s ====="))
    assert.isTrue(StageSignals.reportsPass("test result: ok. 4 passed; 0 failed"))
    assert.isFalse(StageSignals.reportsPass("3 passed, 1 failed"))
    assert.isFalse(StageSignals.reportsPass("10 passed, 2 errors"))
    assert.isFalse(StageSignals.reportsPass("tests passed\nerror: linker failed"))
    assert.isFalse(StageSignals.reportsPass("compiled"))
  })

  it("tool activity by name, and by command for shell tools (redirection wins over reading)", () => {
    assert.strictEqual(StageSignals.activityOf("Write", "{}"), "write")
    assert.strictEqual(StageSignals.activityOf("str_replace_based_edit_tool", "{}"), "edit")
    assert.strictEqual(StageSignals.activityOf("Read", "{}"), "read")
    assert.strictEqual(StageSignals.activityOf("TodoWrite", "{}"), "plan")
    assert.strictEqual(StageSignals.activityOf("Bash", shell("cat /etc/hosts > /tmp/x")), "write")
    assert.strictEqual(StageSignals.activityOf("shell_command", shell("sed -i s/a/b/ f.py")), "edit")
    assert.strictEqual(StageSignals.activityOf("bash", shell("grep -rn foo src")), "read")
    assert.strictEqual(StageSignals.activityOf("bash", shell("cargo build")), "other")
    assert.strictEqual(StageSignals.activityOf("bash", "not json"), "other")
    assert.strictEqual(StageSignals.activityOf("deploy", shell("cat /x")), "other")
  })

  it("windows: severity and passes over the last results, counts over the last calls", () => {
    const failedThenClean = agent([
      ["Bash", shell("pytest"), "Traceback (most recent call last):"],
      ["Read", "{}", "ok"],
      ["Read", "{}", "ok"],
      ["Read", "{}", "ok"]
    ])
    assert.strictEqual(StageSignals.signalsOf(failedThenClean, 3).severity, 0)
    assert.strictEqual(StageSignals.signalsOf(failedThenClean, 4).severity, 0.7)
    // a window of 0 still reads the last result, but counts no call
    const zero = StageSignals.signalsOf(failedThenClean, 0)
    assert.strictEqual(zero.recentReads, 0)
    assert.strictEqual(StageSignals.signalsOf(failedThenClean, 2).recentReads, 2)
    assert.strictEqual(StageSignals.signalsOf(failedThenClean, 3).turnDepth, 9)
  })

  it("one full signal scores about 0.46: under a 0.5 threshold it is ambiguous, under 0.4 it decides capable", () => {
    const hard = agent([["Bash", shell("pytest"), "AssertionError: expected 2"]])
    const scored = StageSignals.scoreOf(StageSignals.dimensionsOf(StageSignals.signalsOf(hard, 3)))
    assert.closeTo(scored.score, Math.tanh(0.5), 1e-12)
    assert.strictEqual(scored.confidence, scored.score)
    assert.strictEqual(StageSignals.pick(StageSignals.signalsOf(hard, 3), 0.5)._tag, "Ambiguous")
    assert.deepInclude(StageSignals.pick(StageSignals.signalsOf(hard, 3), 0.4), {
      tier: "capable",
      source: "dimensions"
    })
  })

  it("corroboration: a hard error on a deep run with no writes (spinning) clears 0.5", () => {
    const spinning = agent([["Bash", shell("make"), "make: *** No rule. Error 2"], [
      "Bash",
      shell("make"),
      "SyntaxError: bad"
    ]], 6)
    const signals = StageSignals.signalsOf(spinning, 3)
    const dimensions = StageSignals.dimensionsOf(signals)
    assert.deepStrictEqual(dimensions, { severity: 0.7, spinning: 1, exploring: 0, production_intensity: 0 })
    const picked = StageSignals.pick(signals, 0.5)
    assert.deepInclude(picked, { _tag: "Decided", tier: "capable", source: "dimensions" })
    assert.closeTo(picked.confidence, Math.tanh(1), 1e-12)
  })

  it("reading on a deep run with no writes is exploring; writing pushes toward efficient", () => {
    const exploring = agent([["Read", "{}", "src"], ["Bash", shell("ls src"), "a.ts"]], 6)
    assert.deepStrictEqual(StageSignals.dimensionsOf(StageSignals.signalsOf(exploring, 3)), {
      severity: 0,
      spinning: 0,
      exploring: 1,
      production_intensity: 0
    })
    const producing = agent([["Write", "{}", "written"], ["Edit", "{}", "edited"], ["Read", "{}", "x"]])
    const signals = StageSignals.signalsOf(producing, 3)
    assert.closeTo(StageSignals.dimensionsOf(signals).production_intensity, 2 / 3, 1e-12)
    assert.deepInclude(StageSignals.pick(signals, 0.3), { tier: "efficient", source: "dimensions" })
  })

  it("hard rules first: a critical error or a compacted context → capable; passing tests after a write → efficient", () => {
    const critical = agent([["Write", "{}", "ok"], ["Bash", shell("pytest"), "5 passed\nKilled: out of memory"]])
    assert.deepStrictEqual(StageSignals.pick(StageSignals.signalsOf(critical, 3), 0), {
      _tag: "Decided",
      tier: "capable",
      source: "override",
      score: 0,
      confidence: 1
    })
    const compacted: ReadonlyArray<Message> = [
      { role: "user", content: "This session is being continued from a previous conversation." }
    ]
    assert.deepInclude(StageSignals.pick(StageSignals.signalsOf(compacted, 3), 1), { source: "override" })
    const settled = agent([["Edit", "{}", "edited"], ["Bash", shell("go test ./..."), "ok  \tpkg\t0.2s\n12 passed"]])
    assert.deepStrictEqual(StageSignals.pick(StageSignals.signalsOf(settled, 3), 1), {
      _tag: "Decided",
      tier: "efficient",
      source: "tests_passed",
      score: 0,
      confidence: 0
    })
    // a pass with no write in the window is not a settled turn
    const passOnly = agent([["Bash", shell("pytest"), "3 passed in 0.1s"]])
    assert.strictEqual(StageSignals.pick(StageSignals.signalsOf(passOnly, 3), 0.5)._tag, "Ambiguous")
  })

  it("a quiet conversation scores 0: ambiguous unless the threshold is 0 (then efficient)", () => {
    const quiet: ReadonlyArray<Message> = [{ role: "user", content: "hello" }]
    assert.deepStrictEqual(StageSignals.pick(StageSignals.signalsOf(quiet, 3), 0.5), {
      _tag: "Ambiguous",
      score: 0,
      confidence: 0
    })
    assert.deepInclude(StageSignals.pick(StageSignals.signalsOf(quiet, 3), 0), {
      tier: "efficient",
      source: "dimensions"
    })
  })

  it("the picker names the default tier", () => {
    assert.strictEqual(StageSignals.defaultTier("efficient_first"), "efficient")
    assert.strictEqual(StageSignals.defaultTier("capable_first"), "capable")
  })

  it("tool_semantics: configured names count as reads, writes, plans or forward activity; built-in names keep theirs", () => {
    const semantics: StageSignals.ToolSemantics = {
      observe: ["KB_search"],
      mutate: ["update_inventory"],
      plan: ["create_research_plan"],
      new: ["send_message"]
    }
    assert.strictEqual(StageSignals.activityOf("kb_SEARCH", "{}", semantics), "read")
    assert.strictEqual(StageSignals.activityOf("update_inventory", "{}", semantics), "write")
    assert.strictEqual(StageSignals.activityOf("create_research_plan", "{}", semantics), "plan")
    assert.strictEqual(StageSignals.activityOf("Send_Message", "{}", semantics), "new")
    assert.strictEqual(StageSignals.activityOf("send_message", "{}"), "other")
    assert.strictEqual(StageSignals.activityOf("lookup", "{}", semantics), "other")
    // the built-in vocabulary first: a configured name never reclassifies it
    assert.strictEqual(StageSignals.activityOf("Write", "{}", { ...semantics, observe: ["write"] }), "write")
    assert.isTrue(StageSignals.builtInToolNames.has("bash"))
    assert.isTrue(StageSignals.builtInToolNames.has("todowrite"))
    assert.isFalse(StageSignals.builtInToolNames.has("kb_search"))
  })

  it("tool_semantics: forward activity keeps a deep run from reading as a stall, without counting as production", () => {
    const semantics: StageSignals.ToolSemantics = { ...StageSignals.emptyToolSemantics, new: ["send_message"] }
    const deep = agent([["send_message", "{}", "sent"], ["lookup", "{}", "found"]], 6)
    const without = StageSignals.dimensionsOf(StageSignals.signalsOf(deep, 3))
    assert.strictEqual(without.spinning, 1)
    const withNew = StageSignals.signalsOf(deep, 3, semantics)
    assert.strictEqual(withNew.recentNew, 1)
    assert.deepStrictEqual(StageSignals.dimensionsOf(withNew), {
      severity: 0,
      spinning: 0,
      exploring: 0,
      production_intensity: 0
    })
    const mutating = StageSignals.signalsOf(agent([["update_inventory", "{}", "ok"]]), 3, {
      ...StageSignals.emptyToolSemantics,
      mutate: ["update_inventory"]
    })
    assert.strictEqual(StageSignals.dimensionsOf(mutating).production_intensity, 1)
  })

  it("a repeated failure (the same call failing twice in a row) is a hard override; its reason is read", () => {
    const repeated = agent([["Bash", shell("make"), "exit code 2"], ["Bash", shell("make"), "exit code 2"]])
    const signals = StageSignals.signalsOf(repeated, 3)
    assert.isTrue(signals.repeatedFailure)
    assert.deepStrictEqual(StageSignals.readingOf(signals), { _tag: "Override", reason: "repeated_failure" })
    assert.deepInclude(StageSignals.pick(signals, 1), { tier: "capable", source: "override" })
    // another call failing, or the same call succeeding in between, is not a repeat
    const different = agent([["Bash", shell("make"), "exit code 2"], ["Bash", shell("make test"), "exit code 2"]])
    assert.isFalse(StageSignals.signalsOf(different, 3).repeatedFailure)
    const recovered = agent([
      ["Bash", shell("make"), "exit code 2"],
      ["Bash", shell("make"), "built"],
      ["Bash", shell("make"), "exit code 2"]
    ])
    assert.isFalse(StageSignals.signalsOf(recovered, 3).repeatedFailure)
    // the reasons of the other overrides
    const critical = agent([["Bash", shell("pytest"), "Killed: out of memory"]])
    assert.deepStrictEqual(StageSignals.readingOf(StageSignals.signalsOf(critical, 3)), {
      _tag: "Override",
      reason: "critical_error"
    })
    const compacted: ReadonlyArray<Message> = [{ role: "user", content: "This session is being continued." }]
    assert.deepStrictEqual(StageSignals.readingOf(StageSignals.signalsOf(compacted, 3)), {
      _tag: "Override",
      reason: "compaction"
    })
  })

  it("the capable hold: a signal-driven escalation holds the next turns capable; a clean test pass ends it", () => {
    const override: StageSignals.Reading = { _tag: "Override", reason: "critical_error" }
    const efficient: StageSignals.Reading = { _tag: "Scored", score: -0.7, confidence: 0.7 }
    const quiet: StageSignals.Reading = { _tag: "Scored", score: 0, confidence: 0 }
    const opened = StageSignals.hold(override, 0.5, 0, 2)
    assert.deepInclude(opened.pick, { _tag: "Decided", tier: "capable", source: "override" })
    assert.strictEqual(opened.remaining, 2)
    // a confident efficient score is held, and so is a quiet turn; a held turn opens no new hold
    const first = StageSignals.hold(efficient, 0.5, opened.remaining, 2)
    assert.deepStrictEqual(first, { pick: { _tag: "Held", score: -0.7, confidence: 0.7 }, remaining: 1 })
    const second = StageSignals.hold(override, 0.5, first.remaining, 2)
    assert.deepStrictEqual(second, { pick: { _tag: "Held", score: 0, confidence: 1 }, remaining: 0 })
    assert.deepInclude(StageSignals.hold(quiet, 0.5, second.remaining, 2), { remaining: 0 })
    assert.strictEqual(StageSignals.hold(quiet, 0.5, 0, 2).pick._tag, "Ambiguous")
    // a clean test pass ends the hold and decides efficient
    assert.deepStrictEqual(StageSignals.hold({ _tag: "TestsPassed" }, 0.5, 2, 2), {
      pick: { _tag: "Decided", tier: "efficient", source: "tests_passed", score: 0, confidence: 0 },
      remaining: 0
    })
    // a confident capable score opens it too; an efficient decision or 0 turns does not
    assert.strictEqual(StageSignals.hold({ _tag: "Scored", score: 0.7, confidence: 0.7 }, 0.5, 0, 3).remaining, 3)
    assert.strictEqual(StageSignals.hold(efficient, 0.5, 0, 2).remaining, 0)
    assert.strictEqual(StageSignals.hold(override, 0.5, 0, 0).remaining, 0)
  })
})
