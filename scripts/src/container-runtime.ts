// `node scripts/dist/container-runtime.js SRC OUT`: the Dockerfile's build stage calls it after
// `npm ci` (which builds) to lay out, in OUT, the `switchyard` server and what it needs at run time
// (./container/closure.ts): each workspace package reached as its package.json, dist/ (JavaScript
// only) and bin/, linked from OUT/node_modules as npm links workspaces; each installed package
// reached copied to the same place under OUT, without its own node_modules (what it needs from
// there is reached and copied on its own). Prints one line per package and the total.
import { cpSync, existsSync, mkdirSync, symlinkSync } from "node:fs"
import path from "node:path"
import { runtimeClosure } from "./container/closure.js"

const SERVER = "packages/server"
/** What of a workspace package runs: its manifest, compiled JavaScript and bin. */
const WORKSPACE_PARTS = ["package.json", "dist", "bin"] as const

const isBuildOutputToSkip = (file: string): boolean =>
  file.endsWith(".d.ts") || file.endsWith(".d.ts.map") || file.endsWith(".js.map") || file.endsWith(".tsbuildinfo")

const main = (): number => {
  const [src, out] = process.argv.slice(2)
  if (src === undefined || out === undefined) {
    console.error("usage: node scripts/dist/container-runtime.js SRC OUT")
    return 2
  }
  const root = path.resolve(src)
  const target = path.resolve(out)
  const packages = runtimeClosure(root, path.join(root, SERVER))
  for (const { dir, name } of packages) {
    const relative = path.relative(root, dir)
    if (relative.startsWith("..")) throw new Error(`${name} resolves outside ${root}: ${dir}`)
    const inNodeModules = relative.split(path.sep).includes("node_modules")
    if (inNodeModules) {
      const own = path.join(dir, "node_modules")
      cpSync(dir, path.join(target, relative), { recursive: true, verbatimSymlinks: true, filter: (f) => f !== own })
    } else {
      for (const part of WORKSPACE_PARTS) {
        const from = path.join(dir, part)
        if (!existsSync(from)) continue
        cpSync(from, path.join(target, relative, part), { recursive: true, filter: (f) => !isBuildOutputToSkip(f) })
      }
      const link = path.join(target, "node_modules", name)
      mkdirSync(path.dirname(link), { recursive: true })
      symlinkSync(path.relative(path.dirname(link), path.join(target, relative)), link)
    }
    console.log(`container-runtime: ${name} (${relative})`)
  }
  console.log(`container-runtime: ${packages.length} packages in ${target}`)
  return 0
}

process.exitCode = main()
