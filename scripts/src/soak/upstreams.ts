// The soak's upstreams: two instances of the testkit's fault-injecting upstream
// (@switchyard-ts/testkit/FakeUpstream) in this process, on 127.0.0.1, so the judge can be "refused"
// (its listener closed) while the answer models keep serving.
//
//   judge      any judge model; its mode is switched at run time (setJudgeMode):
//                up       a completion whose content is a valid capability verdict (boundary
//                         `supported`, p_solve drawn at random from P_SOLVES into a rotation: half
//                         of them reach the soak's threshold 0.7, half do not, so sessions land on
//                         both tiers, and a policy replay at another threshold moves some of them)
//                stalled  never answers (FakeUpstream `Stall`: until the caller gives up)
//                refused  the listener is closed (the instance's scope: its connections are
//                         destroyed, so callers see "connection refused"); the next mode listens
//                         again on the same port with a new instance
//                5xx      500 or 503 with an OpenAI error envelope
//                garbage  200 with a body that is not JSON, or a completion whose content is not a
//                         verdict (alternating)
//   answers    the weak and strong models: a buffered completion, or SSE for `stream: true` (role
//              chunk, three content chunks 2 ms apart, stop chunk, a usage chunk when
//              `stream_options.include_usage`, `data: [DONE]`), usage 40 + 9 tokens. A fraction of
//              calls (the answer fault rate) get 429 (half with `retry-after: 0`), 500 or 503 instead,
//              before any byte of an answer: a shuffled rotation of 1,000 behaviours holding that
//              share of faults.
//
// The request logs are drained every 2 s into counters (stats), so they stay small in long runs.
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import type * as Arr from "effect/Array"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"

/** The judge's modes, in the order of the fault schedule. */
export const MODES = ["up", "stalled", "refused", "5xx", "garbage"] as const
export type JudgeMode = (typeof MODES)[number]

/** Requests served, by what they got (the JSON of the report's `mock` field). */
export interface UpstreamStats {
  readonly judge: { up: number; stalled: number; "5xx": number; garbage: number; refusedSwitches: number }
  readonly answer: { ok: number; stream: number; 429: number; 500: number; 503: number }
}

export interface Upstreams {
  readonly judgePort: number
  readonly answerPort: number
  /** Switch the judge (both judge models) to `mode`; resolves once it is in effect. */
  readonly setJudgeMode: (mode: JudgeMode) => Promise<void>
  /** The counters so far (the logs are drained first). */
  readonly stats: () => Promise<UpstreamStats>
  /** Close both upstreams (every socket destroyed). */
  readonly close: () => Promise<void>
}

export interface UpstreamsOptions {
  readonly judgeModels: ReadonlyArray<string>
  readonly answerModels: ReadonlyArray<string>
  /** Share of answer calls that fail (0 to 1). */
  readonly answerFaultRate: number
}

type Upstream = Context.Tag.Service<FakeUpstream.FakeUpstream>

/** The p_solve values of the judge's verdicts, drawn with equal odds (three at or above 0.7, three below). */
export const P_SOLVES = [0.2, 0.4, 0.6, 0.75, 0.85, 0.95] as const

const verdict = (p: number): FakeUpstream.Behaviour =>
  FakeUpstream.ok(JSON.stringify({ crux: "soak", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: p }))
const NOT_A_VERDICT = "I think the small model can probably do this one."
const answer = FakeUpstream.ok("Here is the soak answer.", {
  gapMs: 2,
  usage: { prompt_tokens: 40, completion_tokens: 9, total_tokens: 49 }
})

/** `n` behaviours drawn with `draw` (at least one). */
const drawn = (n: number, draw: () => FakeUpstream.Behaviour): Arr.NonEmptyReadonlyArray<FakeUpstream.Behaviour> => [
  draw(),
  ...Array.from({ length: n - 1 }, draw)
]

/** What each judge model does in a mode (`refused` has no behaviour: the listener is closed). */
const judgeRotation = (mode: Exclude<JudgeMode, "refused">): Arr.NonEmptyReadonlyArray<FakeUpstream.Behaviour> => {
  switch (mode) {
    case "up":
      return drawn(64, () => verdict(P_SOLVES[Math.floor(Math.random() * P_SOLVES.length)] ?? 0.95))
    case "stalled":
      return [FakeUpstream.stall]
    case "5xx":
      return drawn(64, () => {
        const status = Math.random() < 0.5 ? 500 : 503
        return FakeUpstream.status(status, { message: `judge overloaded (${status})` })
      })
    case "garbage":
      return [
        FakeUpstream.Garbage.make({ body: "<html><body>502 Bad Gateway</body></html>" }),
        FakeUpstream.ok(NOT_A_VERDICT)
      ]
  }
}

/** 1,000 answer behaviours, `rate` of them faults, in random order. */
const answerRotation = (rate: number): Arr.NonEmptyReadonlyArray<FakeUpstream.Behaviour> => {
  const faults = Math.round(rate * 1000)
  const rotation = drawn(1000, () => answer).map((b, i) => {
    if (i >= faults) return b
    const roll = Math.random()
    if (roll < 1 / 3) {
      return FakeUpstream.status(429, {
        message: "rate limited",
        type: "rate_limit_error",
        ...(Math.random() < 0.5 ? { retryAfter: "0" } : {})
      })
    }
    const status = roll < 2 / 3 ? 500 : 503
    return FakeUpstream.status(status, { message: `answer upstream failed (${status})` })
  })
  // Fisher-Yates.
  for (let i = rotation.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    const a = rotation[i]
    const b = rotation[j]
    if (a !== undefined && b !== undefined) {
      rotation[i] = b
      rotation[j] = a
    }
  }
  const [first, ...rest] = rotation
  return first === undefined ? [answer] : [first, ...rest]
}

/** The part of a logged request body the counters read. */
const decodeStreamFlag = Schema.decodeUnknownOption(Schema.Struct({ stream: Schema.optional(Schema.Unknown) }))

/** An upstream in a scope of its own, so it can be stopped before the program ends. */
interface Owned {
  readonly upstream: Upstream
  readonly scope: Scope.CloseableScope
}

/** A fake upstream on `port` (0: a free one); the port may just have been released, so retry briefly. */
const open = (port: number): Effect.Effect<Owned, FakeUpstream.ListenError> =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    return yield* FakeUpstream.make({ port }).pipe(
      Scope.extend(scope),
      Effect.map((upstream) => ({ upstream, scope })),
      Effect.onError(() => Scope.close(scope, Exit.void))
    )
  }).pipe(Effect.retry({ times: 50, schedule: Schedule.spaced("20 millis") }))

/** Start the judge and the answer upstream; the judge starts in mode `up`. */
export const startUpstreams = async (options: UpstreamsOptions): Promise<Upstreams> => {
  const stats: UpstreamStats = {
    judge: { up: 0, stalled: 0, "5xx": 0, garbage: 0, refusedSwitches: 0 },
    answer: { ok: 0, stream: 0, 429: 0, 500: 0, 503: 0 }
  }
  const tallyJudge = (records: ReadonlyArray<FakeUpstream.RequestRecord>): void => {
    for (const { behaviour } of records) {
      if (behaviour === undefined) continue
      switch (behaviour._tag) {
        case "Stall":
          stats.judge.stalled++
          break
        case "Status":
          stats.judge["5xx"]++
          break
        case "Garbage":
          stats.judge.garbage++
          break
        case "Ok":
          if (behaviour.content === NOT_A_VERDICT) stats.judge.garbage++
          else stats.judge.up++
          break
        default:
          break
      }
    }
  }
  const tallyAnswers = (records: ReadonlyArray<FakeUpstream.RequestRecord>): void => {
    for (const { behaviour, body } of records) {
      if (behaviour === undefined) continue
      if (behaviour._tag === "Status") {
        if (behaviour.status === 429 || behaviour.status === 500 || behaviour.status === 503) {
          stats.answer[behaviour.status]++
        }
      } else if (Option.exists(decodeStreamFlag(body), (b) => b.stream === true)) {
        stats.answer.stream++
      } else {
        stats.answer.ok++
      }
    }
  }

  const answers = await Effect.runPromise(open(0))
  const answerRotationOnce = answerRotation(options.answerFaultRate)
  await Effect.runPromise(Effect.forEach(options.answerModels, (m) => answers.upstream.cycle(m, answerRotationOnce)))
  let judge: Owned | undefined = await Effect.runPromise(open(0))
  const judgePort = judge.upstream.port

  const setJudgeBehaviours = (upstream: Upstream, mode: Exclude<JudgeMode, "refused">) =>
    Effect.forEach(options.judgeModels, (m) => upstream.cycle(m, judgeRotation(mode)), { discard: true })
  await Effect.runPromise(setJudgeBehaviours(judge.upstream, "up"))

  const drain = async (): Promise<void> => {
    tallyAnswers(await Effect.runPromise(answers.upstream.drain))
    if (judge !== undefined) tallyJudge(await Effect.runPromise(judge.upstream.drain))
  }
  const drainer = setInterval(() => void drain(), 2000)

  return {
    judgePort,
    answerPort: answers.upstream.port,
    setJudgeMode: async (mode) => {
      if (mode === "refused") {
        stats.judge.refusedSwitches++
        const closing = judge
        judge = undefined
        if (closing !== undefined) {
          await Effect.runPromise(Scope.close(closing.scope, Exit.void))
          tallyJudge(await Effect.runPromise(closing.upstream.drain))
        }
        return
      }
      if (judge === undefined) judge = await Effect.runPromise(open(judgePort))
      await Effect.runPromise(setJudgeBehaviours(judge.upstream, mode))
    },
    stats: async () => {
      await drain()
      return stats
    },
    close: async () => {
      clearInterval(drainer)
      await drain()
      const owned = judge === undefined ? [answers] : [answers, judge]
      judge = undefined
      await Effect.runPromise(Effect.forEach(owned, (o) => Scope.close(o.scope, Exit.void), { discard: true }))
    }
  }
}
