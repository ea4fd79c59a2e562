// What the server needs at run time, read off an installed workspace: the package directories a
// `require` / `import` from the server can reach through `dependencies`, `peerDependencies` (not
// the optional ones) and `optionalDependencies` (when installed), resolved as Node resolves them
// (the nearest `node_modules` upwards), workspace links followed. The Dockerfile's build stage
// copies exactly these into the image (scripts/src/container-runtime.ts).
//
// Not `npm ci --omit=dev`: the packages declare `effect` and `@effect/*` as peer dependencies that
// the workspace satisfies with devDependencies, so the lock file marks them dev and `--omit=dev`
// leaves the server without them. This walk keeps the lock file's versions and its layout.
import * as Schema from "effect/Schema"
import { existsSync, readFileSync, realpathSync } from "node:fs"
import path from "node:path"

const Manifest = Schema.Struct({
  name: Schema.String,
  dependencies: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  optionalDependencies: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  peerDependencies: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  peerDependenciesMeta: Schema.optional(
    Schema.Record({ key: Schema.String, value: Schema.Struct({ optional: Schema.optional(Schema.Boolean) }) })
  )
})
type Manifest = typeof Manifest.Type

const decodeManifest = Schema.decodeUnknownSync(Schema.parseJson(Manifest))

/** One package the server needs: its name and its real directory. */
export interface RuntimePackage {
  readonly name: string
  readonly dir: string
}

/** The package.json of the package in `dir`, decoded (throws naming the file when it is not one). */
export const readManifest = (dir: string): Manifest => {
  const file = path.join(dir, "package.json")
  try {
    return decodeManifest(readFileSync(file, "utf8"))
  } catch (error) {
    throw new Error(`${file}: not a package manifest (${String(error)})`)
  }
}

/** The names a package needs at run time; an optional dependency counts only where it is installed. */
const runtimeNames = (manifest: Manifest): { readonly required: Array<string>; readonly optional: Array<string> } => {
  const optionalPeers = new Set(
    Object.entries(manifest.peerDependenciesMeta ?? {}).filter(([, meta]) => meta.optional === true).map(([n]) => n)
  )
  const peers = Object.keys(manifest.peerDependencies ?? {})
  return {
    required: [...Object.keys(manifest.dependencies ?? {}), ...peers.filter((n) => !optionalPeers.has(n))],
    optional: [...Object.keys(manifest.optionalDependencies ?? {}), ...peers.filter((n) => optionalPeers.has(n))]
  }
}

/** Node's lookup: `name` in the nearest `node_modules` from `fromDir` up to `root`, as a real path. */
export const resolvePackage = (name: string, fromDir: string, root: string): string | undefined => {
  for (let dir = fromDir;; dir = path.dirname(dir)) {
    const candidate = path.join(dir, "node_modules", name)
    if (existsSync(path.join(candidate, "package.json"))) return realpathSync(candidate)
    if (dir === root || path.dirname(dir) === dir) return undefined
  }
}

/**
 * Every package reachable at run time from the workspace package `start` (a directory under
 * `root`), `start` included, in the order found. A required dependency that cannot be resolved
 * throws, naming who needs it.
 */
export const runtimeClosure = (root: string, start: string): ReadonlyArray<RuntimePackage> => {
  const found = new Map<string, RuntimePackage>()
  const visit = (dir: string): void => {
    const real = realpathSync(dir)
    if (found.has(real)) return
    const manifest = readManifest(real)
    found.set(real, { name: manifest.name, dir: real })
    const { optional, required } = runtimeNames(manifest)
    for (const name of required) {
      const resolved = resolvePackage(name, real, root)
      if (resolved === undefined) throw new Error(`${manifest.name} needs ${name}, which is not installed`)
      visit(resolved)
    }
    for (const name of optional) {
      const resolved = resolvePackage(name, real, root)
      if (resolved !== undefined) visit(resolved)
    }
  }
  visit(start)
  return [...found.values()]
}
