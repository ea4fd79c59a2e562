/**
 * The packages as a library consumer installs them: `npm pack` of every workspace package, the
 * tarballs unpacked into a fresh consumer project, and the library snippets of docs/library.md type-checked
 * there (strict, `moduleResolution: NodeNext`) and run. `effect` and `@effect/*` must be peer
 * dependencies only, so a consumer's application holds one copy of the Effect runtime.
 *
 * Two ways: offline, the consumer's peer dependencies are links to this repository's own
 * installed copies; and from the registry, the `npm install` commands of docs/library.md run as
 * written (the packed tarballs in place of the `@switchyard-ts/*` names). The registry test skips
 * with one line where the registry cannot be reached, unless `SWITCHYARD_REQUIRE_REGISTRY=1`
 * (`.ci/run` sets it). Needs the built `dist/` (`npm test` builds first).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Schema from "effect/Schema"
import { execFileSync } from "node:child_process"
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

/** The code blocks of docs/library.md marked `<!-- snippet: NAME -->`, by name. */
const snippets = (): ReadonlyMap<string, string> => {
  const doc = readFileSync(path.join(root, "docs", "library.md"), "utf8")
  const found = new Map<string, string>()
  for (const match of doc.matchAll(/<!-- snippet: ([\w.-]+) -->\n```ts\n([\s\S]*?)```/g)) {
    const [, name, code] = match
    if (name !== undefined && code !== undefined) found.set(name, code)
  }
  return found
}

const run = (command: string, args: ReadonlyArray<string>, cwd: string, timeout = 120_000) =>
  execFileSync(command, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout })

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
const packAll = (dir: string): (name: string) => string => {
  const tarballs = path.join(dir, "tarballs")
  mkdirSync(tarballs)
  run("npm", ["pack", "--workspaces", "--ignore-scripts", "--pack-destination", tarballs, "--silent"], root)
  return (name) => {
    const tarball = readdirSync(tarballs).find((file) => file.startsWith(`switchyard-ts-${name}-`))
    assert.isDefined(tarball, `${name} was packed`)
    return path.join(tarballs, tarball ?? "")
  }
}

/** The docs/library.md snippets written into `consumer`, type-checked there, and the first one run. */
const checkSnippets = (consumer: string): void => {
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
  assert.deepStrictEqual([...found.keys()].sort(), ["library-layers.ts", "library-toml.ts"])
  for (const [name, code] of found) writeFileSync(path.join(consumer, name), code)
  run(process.execPath, [path.join(root, "node_modules", "typescript", "bin", "tsc"), "-p", "."], consumer)
  const output = run(process.execPath, [path.join("out", "library-toml.js")], consumer)
  assert.deepStrictEqual(output.trim().split("\n"), ["passthrough small-coder", "OK"])
}

/** Whether the npm registry answers `npm ping` within 20 s. */
const registryReachable = (): boolean => {
  try {
    run("npm", ["ping"], root, 20_000)
    return true
  } catch {
    return false
  }
}

describe("packaging", () => {
  it(
    "packed packages install into a fresh project: peers only for Effect, the docs/library.md snippets type-check and run",
    () => {
      const dir = mkdtempSync(path.join(tmpdir(), "switchyard-consumer-"))
      try {
        const tarballOf = packAll(dir)
        const modules = path.join(dir, "consumer", "node_modules")
        mkdirSync(path.join(modules, "@switchyard-ts"), { recursive: true })
        const external = new Set<string>()
        for (const name of packages) {
          const target = path.join(modules, "@switchyard-ts", name)
          mkdirSync(target)
          run("tar", ["-xzf", tarballOf(name), "-C", target, "--strip-components=1"], dir)
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
        checkSnippets(consumer)
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    },
    120_000
  )

  it(
    "packed packages install from the registry with docs/library.md's own npm install commands: one tree, one copy of OpenTelemetry, the snippets run",
    (ctx) => {
      if (!registryReachable()) {
        assert.notStrictEqual(
          process.env["SWITCHYARD_REQUIRE_REGISTRY"],
          "1",
          "the npm registry does not answer `npm ping`, and SWITCHYARD_REQUIRE_REGISTRY=1 requires this test"
        )
        console.warn("packaging: the npm registry does not answer; the install-from-the-registry test is skipped")
        return ctx.skip()
      }
      const commands = installCommands()
      assert.strictEqual(commands.length, 2, "docs/library.md has its two npm install commands")
      const dir = mkdtempSync(path.join(tmpdir(), "switchyard-registry-consumer-"))
      try {
        const tarballOf = packAll(dir)
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
          run("npm", ["install", "--no-audit", "--no-fund", ...resolved], consumer, 300_000)
        }
        run("npm", ["install", "--no-audit", "--no-fund", "--save-dev", "@types/node@^20"], consumer, 300_000)
        // `npm ls` fails on a missing, invalid or extraneous package anywhere in the tree
        run("npm", ["ls", "--all"], consumer)
        assert.isFalse(
          existsSync(path.join(consumer, "node_modules", "@switchyard-ts", "server", "node_modules", "@opentelemetry")),
          "the server shares the consumer's OpenTelemetry packages"
        )
        checkSnippets(consumer)
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    },
    600_000
  )
})
