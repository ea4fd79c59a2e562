/**
 * The packages as a library consumer installs them: `npm pack` of every workspace package, the
 * tarballs unpacked into a fresh consumer project, and every TypeScript code block of README.md and
 * docs/library.md compiled there as a program of its own (strict, `moduleResolution: NodeNext`),
 * each type a comment of it states checked exactly, and each run, printing what it says it prints.
 * `effect` and `@effect/*` must be peer dependencies only, so a consumer's application holds one
 * copy of the Effect runtime.
 *
 * Two ways: offline, the consumer's peer dependencies are links to this repository's own
 * installed copies; and from the registry, the `npm install` commands of docs/library.md run as
 * written (the packed tarballs in place of the `@switchyard-ts/*` names). The registry test skips
 * with one line where the registry cannot be reached, unless `SWITCHYARD_REQUIRE_REGISTRY=1`
 * (`.ci/run` sets it). Needs the built `dist/` (`npm test` builds first).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Schema from "effect/Schema"
import { execFile } from "node:child_process"
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync
} from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"

const root = path.resolve(import.meta.dirname, "../../..")
const packages = ["protocol", "client", "routing", "config", "testkit", "server"] as const

const Manifest = Schema.Struct({
  name: Schema.String,
  dependencies: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  peerDependencies: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String }))
})
const decodeManifest = Schema.decodeUnknownSync(Schema.parseJson(Manifest))

const isEffectPackage = (name: string) => name === "effect" || name.startsWith("@effect/")

/** The pages whose TypeScript code blocks are programs a consumer can run as written. */
const pages = ["README.md", path.join("docs", "library.md")] as const

/** A TypeScript code block of a page, by the name its `<!-- snippet: NAME.ts -->` line gives it. */
interface Snippet {
  readonly page: string
  readonly name: string
  readonly code: string
}

/**
 * Every ```ts block of {@link pages}, each named by a `<!-- snippet: NAME.ts -->` line right above
 * it (a block without one fails: no block escapes the check); names are unique.
 */
const snippets = (): ReadonlyArray<Snippet> => {
  const found: Array<Snippet> = []
  for (const page of pages) {
    const text = readFileSync(path.join(root, page), "utf8")
    for (const match of text.matchAll(/^```([^\n]*)\n([\s\S]*?)^```[ \t]*$/gm)) {
      const [, language = "", code = ""] = match
      if (!["ts", "typescript", "js", "javascript", "tsx"].includes(language.trim())) continue
      const before = text.slice(0, match.index).trimEnd().split("\n").at(-1) ?? ""
      const name = /^<!-- snippet: ([\w.-]+\.ts) -->$/.exec(before)?.[1]
      assert.isDefined(
        name,
        `${page}: a \`\`\`${language} block without a <!-- snippet: NAME.ts --> line above it:\n${code}`
      )
      assert.strictEqual(language, "ts", `${page}: ${name}: a snippet is a \`\`\`ts block`)
      assert.isFalse(found.some((other) => other.name === name), `${page}: ${name} is named twice`)
      found.push({ page, name: name ?? "", code })
    }
  }
  return found
}

/** A type a comment of a snippet states: the top-level constant `name` is of type `type`, exactly. */
interface Claim {
  readonly name: string
  readonly type: string
}

/**
 * The type at the start of a comment's text (`Effect.Effect<A, E, R>: prose`): a generic type
 * reference up to its closing `>` (`=>` inside is no bracket), followed by nothing or `:` and prose.
 * None when the comment does not start with a capitalised name and `<`.
 */
const statedType = (comment: string): string | undefined => {
  if (!/^[A-Z][\w.]*</.test(comment)) return undefined
  let depth = 0
  for (let i = 0; i < comment.length; i++) {
    const c = comment[i]
    if (c === "<") depth++
    else if (c === ">" && comment[i - 1] !== "=") {
      depth--
      if (depth === 0) {
        const rest = comment.slice(i + 1).trim()
        assert.isTrue(rest === "" || rest.startsWith(":"), `a type comment goes on with ':' and prose: ${comment}`)
        return comment.slice(0, i + 1)
      }
    }
  }
  return assert.fail(`a type comment whose brackets do not close: ${comment}`)
}

/**
 * The types `code` states in comments: a `// Type<…>` comment on the line right above a
 * `const` / `export const`, or at the end of its line. Only top-level constants can be checked:
 * a type comment on an indented one fails.
 */
const claimsOf = (code: string): ReadonlyArray<Claim> => {
  const lines = code.split("\n")
  const claims: Array<Claim> = []
  lines.forEach((line, i) => {
    const declared = /^(\s*)(?:export\s+)?(?:const|let)\s+(\w+)\b/.exec(line)
    if (declared === null) return
    const [, indent = "", name = ""] = declared
    const above = /^\s*\/\/ (.*)$/.exec(lines[i - 1] ?? "")?.[1]
    const trailing = line.lastIndexOf(" // ") === -1 ? undefined : line.slice(line.lastIndexOf(" // ") + 4)
    for (const comment of [above, trailing]) {
      const type = comment === undefined ? undefined : statedType(comment.trim())
      if (type === undefined) continue
      assert.strictEqual(indent, "", `the type of ${name} is stated on a constant that is not top-level: ${line}`)
      claims.push({ name, type })
    }
  })
  return claims
}

/**
 * `code` with a check of each of its {@link claimsOf} appended: the constant's type equals the stated
 * one (both ways), and — so that the check itself is known to bite — does not equal `unknown`.
 */
const withTypeChecks = (code: string): string => {
  const claims = claimsOf(code)
  if (claims.length === 0) return code
  const checks = claims.flatMap(({ name, type }) => [
    `const typeClaim_${name}: SnippetTypeEquals<typeof ${name}, ${type}> = true`,
    "// @ts-expect-error the check of a false claim fails",
    `const typeProbe_${name}: SnippetTypeEquals<typeof ${name}, unknown> = true`
  ])
  return [
    code,
    "type SnippetTypeEquals<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false",
    ...checks,
    ""
  ].join("\n")
}

/** What each snippet prints when run, line by line (a new snippet states its output here). */
const printed: Readonly<Record<string, ReadonlyArray<string>>> = {
  "readme-library.ts": ["OK"],
  "library-toml.ts": ["passthrough small-coder", "OK"],
  "library-layers.ts": ["small-coder"],
  "library-stream.ts": ["OK"],
  "library-reload.ts": ["added: hello; kept: fast"],
  "library-pricing.ts": [
    "0.00036",
    "0.00036",
    "invalid pricing for model \"small-coder\": unknown field \"discount\"; use a nonempty model ID and rates from 0 to 10000 USD per million tokens"
  ]
}

/**
 * Run `command` and resolve with its standard output; rejects with an error carrying `stdout` and
 * `stderr` when it fails. Asynchronous, so the test worker stays responsive while npm installs.
 */
const run = (command: string, args: ReadonlyArray<string>, cwd: string, timeout = 120_000): Promise<string> =>
  new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { cwd, encoding: "utf8", timeout, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error === null) resolve(stdout)
        else reject(Object.assign(error, { stdout, stderr }))
      }
    )
  })

/** The arguments of each `npm install` line of docs/library.md's install block, in order. */
const installCommands = (): ReadonlyArray<ReadonlyArray<string>> => {
  const doc = readFileSync(path.join(root, "docs", "library.md"), "utf8")
  const block = /<!-- install -->\n```sh\n([\s\S]*?)```/.exec(doc)?.[1] ?? ""
  return block
    .split("\n")
    .filter((line) => line.startsWith("npm install "))
    .map((line) => line.slice("npm install ".length).split(/\s+/).filter((arg) => arg !== ""))
}

/** Every workspace package packed into `dir/tarballs`; the tarball of a package by its short name. */
const packAll = async (dir: string): Promise<(name: string) => string> => {
  const tarballs = path.join(dir, "tarballs")
  mkdirSync(tarballs)
  await run("npm", ["pack", "--workspaces", "--ignore-scripts", "--pack-destination", tarballs, "--silent"], root)
  return (name) => {
    const tarball = readdirSync(tarballs).find((file) => file.startsWith(`switchyard-ts-${name}-`))
    assert.isDefined(tarball, `${name} was packed`)
    return path.join(tarballs, tarball ?? "")
  }
}

/** The output of a failed command (what tsc printed), or the error's own message. */
const outputOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "stdout" in error && "stderr" in error
    ? `${String(error.stdout)}${String(error.stderr)}`
    : String(error)

/**
 * The snippets of README.md and docs/library.md written into `consumer` with their type checks,
 * compiled there together, and each run: it prints what {@link printed} says.
 */
const checkSnippets = async (consumer: string): Promise<void> => {
  writeFileSync(
    path.join(consumer, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        exactOptionalPropertyTypes: true,
        skipLibCheck: true,
        types: ["node"],
        outDir: "out"
      },
      include: ["*.ts"]
    })
  )
  const found = snippets()
  assert.deepStrictEqual(found.map((snippet) => snippet.name).sort(), Object.keys(printed).sort())
  assert.isAbove(found.flatMap((snippet) => claimsOf(snippet.code)).length, 0, "the snippets state types")
  for (const { code, name } of found) writeFileSync(path.join(consumer, name), withTypeChecks(code))
  try {
    await run(process.execPath, [path.join(root, "node_modules", "typescript", "bin", "tsc"), "-p", "."], consumer)
  } catch (error) {
    assert.fail(`the snippets do not compile as written:\n${outputOf(error)}`)
  }
  for (const { name, page } of found) {
    const script = path.join("out", name.replace(/\.ts$/, ".js"))
    let output = ""
    try {
      output = await run(process.execPath, [script], consumer, 60_000)
    } catch (error) {
      assert.fail(`${page}: ${name} failed when run:\n${outputOf(error)}`)
    }
    assert.deepStrictEqual(output.trimEnd().split("\n"), printed[name], `${page}: ${name} prints`)
  }
}

/** Whether the npm registry answers `npm ping` within 20 s. */
const registryReachable = async (): Promise<boolean> => {
  try {
    await run("npm", ["ping"], root, 20_000)
    return true
  } catch {
    return false
  }
}

describe("packaging", () => {
  it("README.md stays the front door: at most 300 lines, its library block one of the checked snippets", () => {
    const readme = readFileSync(path.join(root, "README.md"), "utf8")
    assert.isAtMost(readme.trimEnd().split("\n").length, 300)
    assert.include(
      snippets().filter((snippet) => snippet.page === "README.md").map((snippet) => snippet.name),
      "readme-library.ts"
    )
  })

  it("type comments are read off the snippets' top-level constants, above or at the end of the line", () => {
    const code = [
      "// Layer.Layer<Router.Router, never, never>",
      "export const RouterLive = build()",
      "const answered = Router.complete(request) // Effect.Effect<A, E | F, never>: route and answer",
      "// routing only (prose, not a type)",
      "const decided = Router.decide(request)",
      "// Effect.Effect<(n: number) => string, never, never>",
      "const f = make()"
    ].join("\n")
    assert.deepStrictEqual(claimsOf(code), [
      { name: "RouterLive", type: "Layer.Layer<Router.Router, never, never>" },
      { name: "answered", type: "Effect.Effect<A, E | F, never>" },
      { name: "f", type: "Effect.Effect<(n: number) => string, never, never>" }
    ])
    assert.throws(() => claimsOf("function f() {\n  // Effect.Effect<A>\n  const inner = g()\n}"), /not top-level/)
  })

  it(
    "packed packages install into a fresh project: peers only for Effect, every README.md and docs/library.md snippet compiles, has the types it states and runs",
    async () => {
      const dir = mkdtempSync(path.join(tmpdir(), "switchyard-consumer-"))
      try {
        const tarballOf = await packAll(dir)
        const modules = path.join(dir, "consumer", "node_modules")
        mkdirSync(path.join(modules, "@switchyard-ts"), { recursive: true })
        const external = new Set<string>()
        for (const name of packages) {
          const target = path.join(modules, "@switchyard-ts", name)
          mkdirSync(target)
          await run("tar", ["-xzf", tarballOf(name), "-C", target, "--strip-components=1"], dir)
          assert.isTrue(existsSync(path.join(target, "dist", "index.js")), `${name} ships dist/`)
          const manifest = decodeManifest(readFileSync(path.join(target, "package.json"), "utf8"))
          const dependencies = Object.keys(manifest.dependencies ?? {})
          const peers = Object.keys(manifest.peerDependencies ?? {})
          assert.deepStrictEqual(
            dependencies.filter(isEffectPackage),
            [],
            `${name}: Effect packages are not dependencies`
          )
          assert.include(peers, "effect", `${name}: effect is a peer dependency`)
          for (const dependency of [...dependencies, ...peers]) {
            if (!dependency.startsWith("@switchyard-ts/")) external.add(dependency)
          }
        }
        // The consumer's own installs: links to this repository's copies (one `effect` in all).
        for (const dependency of [...external, "@effect/platform-node", "@types/node"]) {
          const link = path.join(modules, dependency)
          mkdirSync(path.dirname(link), { recursive: true })
          if (!existsSync(link)) symlinkSync(path.join(root, "node_modules", dependency), link, "dir")
        }
        const consumer = path.join(dir, "consumer")
        writeFileSync(
          path.join(consumer, "package.json"),
          JSON.stringify({ name: "consumer", private: true, type: "module" })
        )
        await checkSnippets(consumer)
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    },
    120_000
  )

  it(
    "packed packages install from the registry with docs/library.md's own npm install commands: one tree, one copy of OpenTelemetry, the snippets run",
    async (ctx) => {
      if (!(await registryReachable())) {
        assert.notStrictEqual(
          process.env["SWITCHYARD_REQUIRE_REGISTRY"],
          "1",
          "the npm registry does not answer `npm ping`, and SWITCHYARD_REQUIRE_REGISTRY=1 requires this test"
        )
        process.stderr.write(
          "packaging: the npm registry does not answer; the install-from-the-registry test is skipped" + "\n"
        )
        return ctx.skip()
      }
      const commands = installCommands()
      assert.strictEqual(commands.length, 2, "docs/library.md has its two npm install commands")
      const dir = mkdtempSync(path.join(tmpdir(), "switchyard-registry-consumer-"))
      try {
        const tarballOf = await packAll(dir)
        const consumer = path.join(dir, "consumer")
        mkdirSync(consumer)
        // The packages are not published: the registry's part for them is played by their tarballs,
        // for the packages named on the command line and for those they depend on (`overrides`).
        const ours = (name: string) => `file:${path.relative(consumer, tarballOf(name))}`
        const overrides = Object.fromEntries(packages.map((name) => [`@switchyard-ts/${name}`, ours(name)]))
        writeFileSync(
          path.join(consumer, "package.json"),
          JSON.stringify({ name: "consumer", private: true, type: "module", overrides })
        )
        for (const args of commands) {
          const resolved = args.map((arg) =>
            arg.startsWith("@switchyard-ts/") ? `${arg}@${ours(arg.slice("@switchyard-ts/".length))}` : arg
          )
          assert.notInclude(resolved, "--legacy-peer-deps")
          await run("npm", ["install", "--no-audit", "--no-fund", ...resolved], consumer, 300_000)
        }
        await run("npm", ["install", "--no-audit", "--no-fund", "--save-dev", "@types/node@^20"], consumer, 300_000)
        // `npm ls` fails on a missing, invalid or extraneous package anywhere in the tree
        await run("npm", ["ls", "--all"], consumer)
        assert.isFalse(
          existsSync(path.join(consumer, "node_modules", "@switchyard-ts", "server", "node_modules", "@opentelemetry")),
          "the server shares the consumer's OpenTelemetry packages"
        )
        await checkSnippets(consumer)
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    },
    600_000
  )
})
