// The pinned CLIs of e2e/package.json, installed into e2e/node_modules (`npm ci` there) when they
// are missing or not the locked versions, and where their binaries are.
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { execFileSync } from "node:child_process"
import fs from "node:fs"
import path from "node:path"
import { E2E_DIR, ROOT } from "./paths.js"

/** The pinned CLIs: the key each version is reported under, and its package. */
const CLIS = { claude: "@anthropic-ai/claude-code", codex: "@openai/codex", gemini: "@google/gemini-cli" } as const

/** The version of each pinned CLI. */
export type Versions = { readonly [K in keyof typeof CLIS]: string }

const Lock = Schema.parseJson(Schema.Struct({
  packages: Schema.Record({ key: Schema.String, value: Schema.Struct({ version: Schema.optional(Schema.String) }) })
}))
const Manifest = Schema.parseJson(Schema.Struct({ version: Schema.String }))

const lockedVersion = (pkg: string): string => {
  const lock = Schema.decodeUnknownSync(Lock)(fs.readFileSync(path.join(E2E_DIR, "package-lock.json"), "utf8"))
  const version = lock.packages[`node_modules/${pkg}`]?.version
  if (version === undefined) throw new Error(`e2e/package-lock.json does not pin ${pkg}`)
  return version
}

const installedVersion = (pkg: string): string | undefined => {
  try {
    return Schema.decodeUnknownSync(Manifest)(
      fs.readFileSync(path.join(E2E_DIR, "node_modules", pkg, "package.json"), "utf8")
    ).version
  } catch {
    return undefined
  }
}

/** Installs the pinned CLIs when needed; their versions. */
export const ensureInstalled = (): Versions => {
  const stale = Object.values(CLIS).filter((pkg) => installedVersion(pkg) !== lockedVersion(pkg))
  if (stale.length > 0) {
    console.log(`e2e: installing ${stale.map((pkg) => `${pkg}@${lockedVersion(pkg)}`).join(", ")} into e2e/ (npm ci)`)
    execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: E2E_DIR, stdio: "inherit", timeout: 600_000 })
  }
  if (!fs.existsSync(path.join(ROOT, "packages/server/dist/Cli.js"))) {
    throw new Error("packages/server/dist is missing: run `npm ci` (or `npm run build`) at the repository root first")
  }
  return {
    claude: lockedVersion(CLIS.claude),
    codex: lockedVersion(CLIS.codex),
    gemini: lockedVersion(CLIS.gemini)
  }
}

const Report = Schema.Struct({
  header: Schema.optional(Schema.Struct({ glibcVersionRuntime: Schema.optional(Schema.String) }))
})

/**
 * The native binary of Claude Code's platform package, run directly: the wrapper's bin/claude.exe
 * is only replaced by it when npm runs the wrapper's postinstall, which npm may skip for unapproved
 * scripts.
 */
export const claudeBinary = (): string => {
  const report = Schema.decodeUnknownOption(Report)(process.report.getReport())
  const glibc = Option.isSome(report) ? report.value.header?.glibcVersionRuntime : undefined
  const libc = process.platform === "linux" && glibc === undefined ? "-musl" : ""
  const dir = path.join(E2E_DIR, "node_modules/@anthropic-ai", `claude-code-${process.platform}-${process.arch}${libc}`)
  const native = path.join(dir, process.platform === "win32" ? "claude.exe" : "claude")
  if (fs.existsSync(native)) return native
  return path.join(E2E_DIR, "node_modules/.bin/claude")
}

/** Codex's JavaScript entry. */
export const CODEX_JS = path.join(E2E_DIR, "node_modules/@openai/codex/bin/codex.js")

/** Gemini CLI's JavaScript entry (its bundle; the package has no native part it needs). */
export const GEMINI_JS = path.join(E2E_DIR, "node_modules/@google/gemini-cli/bundle/gemini.js")
