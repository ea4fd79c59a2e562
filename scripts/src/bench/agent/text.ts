/**
 * Deterministic text for the bench's coding-agent conversations: a seeded PRNG and the prose,
 * source files, shell output and opaque tokens a coding agent's requests carry. Everything is a
 * function of its seed, so a body is the same bytes on every run and every machine.
 */

/** A PRNG: each call returns the next float in [0, 1). */
export type Rng = () => number

/** mulberry32 over `seed` (any integer; the same seed gives the same sequence). */
export const rng = (seed: number): Rng => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** A seed derived from `seed` and `salt`, so each part of a conversation has a stream of its own. */
export const subSeed = (seed: number, salt: number): number => Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) + salt * 7919

/** An integer in [lo, hi]. */
export const int = (r: Rng, lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo + 1))

/** One element of a non-empty list. */
export const pick = <A>(r: Rng, items: ReadonlyArray<A>): A => {
  const item = items[Math.floor(r() * items.length)]
  if (item === undefined) throw new Error("pick from an empty list")
  return item
}

const WORDS = [
  "request",
  "route",
  "session",
  "handler",
  "buffer",
  "stream",
  "config",
  "target",
  "client",
  "server",
  "schema",
  "decode",
  "encode",
  "header",
  "timeout",
  "retry",
  "budget",
  "cache",
  "token",
  "message",
  "result",
  "error",
  "value",
  "option",
  "record",
  "field",
  "parser",
  "layer",
  "effect",
  "fiber",
  "metric",
  "counter",
  "window",
  "chunk",
  "event",
  "socket",
  "answer",
  "verdict",
  "judge",
  "policy",
  "build",
  "test",
  "module",
  "import",
  "export",
  "function",
  "type",
  "interface",
  "default",
  "state"
] as const
const VERBS = [
  "reads",
  "writes",
  "checks",
  "returns",
  "keeps",
  "drops",
  "parses",
  "sends",
  "waits for",
  "counts",
  "builds",
  "resolves",
  "merges",
  "splits",
  "retries",
  "logs",
  "records",
  "validates",
  "closes",
  "opens"
] as const
const QUALIFIERS = [
  "before the first byte",
  "when the caller asks for it",
  "on every request",
  "once per session",
  "after the deadline",
  "without copying the body",
  "in the same order",
  "as the upstream sent it",
  "only for this route",
  "unless the flag is set",
  "for the whole run",
  "with a bounded wait"
] as const
const IDENTS = [
  "decodeBody",
  "routeRequest",
  "sessionKey",
  "upstreamUrl",
  "parseChunk",
  "toEnvelope",
  "withDeadline",
  "retryPolicy",
  "budgetLeft",
  "tokenCount",
  "firstChunk",
  "lastTurn",
  "toolCalls",
  "judgePrompt",
  "stageSignals",
  "storeDecision",
  "relayEvents",
  "mergeHeaders",
  "countUsage",
  "writeHead"
] as const
const TYPES = ["string", "number", "boolean", "Request", "Route", "Option<Verdict>", "ReadonlyArray<Chunk>", "Headers"]
const DIRS = ["src", "src/internal", "src/routes", "test", "src/wire", "src/store"] as const

/** A word-level sentence, capitalised, ending with a full stop. */
export const sentence = (r: Rng): string => {
  const subject = pick(r, WORDS)
  const words = [
    `The ${subject}`,
    pick(r, VERBS),
    `the ${pick(r, WORDS)}`,
    ...(r() < 0.6 ? [pick(r, QUALIFIERS)] : []),
    ...(r() < 0.3 ? [`and the ${pick(r, WORDS)} ${pick(r, VERBS)} the ${pick(r, WORDS)}`] : [])
  ]
  return `${words.join(" ")}${r() < 0.1 ? " — see the note below" : ""}.`
}

/** Sentences up to about `chars` characters. */
export const prose = (r: Rng, chars: number): string => {
  const out: Array<string> = []
  let length = 0
  while (length < chars) {
    const s = sentence(r)
    out.push(s)
    length += s.length + 1
  }
  return out.join(" ")
}

/** A Markdown document of `##` sections with bullets, about `chars` characters. */
export const markdown = (r: Rng, title: string, chars: number): string => {
  const lines = [title, ""]
  let length = title.length
  while (length < chars) {
    const heading = `# ${pick(r, WORDS)} and ${pick(r, WORDS)}`
    lines.push(heading, "", prose(r, 200))
    length += heading.length + 200
    for (let i = int(r, 3, 7); i > 0; i--) {
      const bullet = ` - ${prose(r, int(r, 60, 220))}${r() < 0.2 ? " Use `" + pick(r, IDENTS) + "` for it." : ""}`
      lines.push(bullet)
      length += bullet.length
    }
    lines.push("")
  }
  return lines.join("\n")
}

/** A project file path. */
export const filePath = (r: Rng): string => `/work/project/${pick(r, DIRS)}/${pick(r, IDENTS)}.ts`

/** One line of TypeScript-looking source. */
const codeLine = (r: Rng, indent: number): string => {
  const pad = "  ".repeat(indent)
  const a = pick(r, IDENTS)
  const b = pick(r, IDENTS)
  switch (int(r, 0, 7)) {
    case 0:
      return `${pad}import { ${a}, ${b} } from "./${pick(r, WORDS)}.js"`
    case 1:
      return `${pad}// ${sentence(r)}`
    case 2:
      return `${pad}export const ${a} = (${pick(r, WORDS)}: ${pick(r, TYPES)}): ${pick(r, TYPES)} => {`
    case 3:
      return `${pad}const ${pick(r, WORDS)} = ${a}.${b}("${pick(r, WORDS)}", { ${pick(r, WORDS)}: ${int(r, 0, 999)} })`
    case 4:
      return `${pad}if (${a} === undefined) return yield* new ${
        pick(r, ["Timeout", "Refused", "Invalid"])
      }Error({ reason: "${pick(r, QUALIFIERS)}" })`
    case 5:
      return `${pad}throw new Error(\`${pick(r, WORDS)} failed: \${${a}}\\n\`)`
    case 6:
      return `${pad}return { ...${a}, ${pick(r, WORDS)}: ${b}.length > ${int(r, 1, 64)} ? "${pick(r, WORDS)}" : null }`
    default:
      return `${pad}}`
  }
}

/** Source text of about `chars` characters, one statement per line. */
export const sourceText = (r: Rng, chars: number): Array<string> => {
  const lines: Array<string> = []
  let length = 0
  while (length < chars) {
    const line = codeLine(r, int(r, 0, 3))
    lines.push(line)
    length += line.length + 1
  }
  return lines
}

/** A file as a coding agent's read tool returns it: `cat -n` numbering, a tab, the line. */
export const numberedFile = (r: Rng, chars: number, firstLine = 1): string =>
  sourceText(r, chars).map((line, i) => `${String(firstLine + i).padStart(6)}\t${line}`).join("\n")

/** A test runner's and a build's output, about `chars` characters. */
export const shellOutput = (r: Rng, chars: number): string => {
  const lines = [`> switchyard-ts@0.1.0 test`, `> vitest run ${pick(r, DIRS)}`, ""]
  let length = 60
  while (length < chars) {
    const file = `${pick(r, DIRS)}/${pick(r, IDENTS)}.test.ts`
    const line = r() < 0.85
      ? ` ✓ ${file} (${int(r, 1, 40)} tests) ${int(r, 2, 900)}ms`
      : ` × ${file} > ${sentence(r)}\n   → expected "${pick(r, WORDS)}" to equal "${pick(r, WORDS)}"\n     at ${file}:${
        int(r, 1, 400)
      }:${int(r, 1, 80)}`
    lines.push(line)
    length += line.length + 1
  }
  lines.push(
    "",
    ` Test Files  ${int(r, 1, 9)} failed | ${int(r, 20, 90)} passed`,
    ` Duration  ${int(r, 2, 60)}.${int(r, 0, 9)}s`
  )
  return lines.join("\n")
}

/** A grep tool's output: `path:line:text` lines, about `chars` characters. */
export const grepOutput = (r: Rng, chars: number): string => {
  const lines: Array<string> = []
  let length = 0
  while (length < chars) {
    const line = `${filePath(r).slice("/work/project/".length)}:${int(r, 1, 900)}:${codeLine(r, int(r, 0, 2))}`
    lines.push(line)
    length += line.length + 1
  }
  return lines.join("\n")
}

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

/** An opaque base64 token of `chars` characters (a thinking signature, encrypted reasoning). */
export const opaque = (r: Rng, chars: number): string => {
  let out = ""
  for (let i = 0; i < chars; i++) out += BASE64[Math.floor(r() * 64)]
  return out
}

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

/** An id: `prefix` and `chars` alphanumerics. */
export const id = (r: Rng, prefix: string, chars: number): string => {
  let out = prefix
  for (let i = 0; i < chars; i++) out += ALNUM[Math.floor(r() * ALNUM.length)]
  return out
}
