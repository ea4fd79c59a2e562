// Writes the `exports` of packages/routing/package.json: one flat entry point per module of src/
// (its file name), wherever the module lives in src/'s folders; internal/ modules are not exported.
// `npm run exports` after adding, moving or removing a module of the routing package.
import { readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join, relative } from "node:path"

const pkg = new URL("../packages/routing/", import.meta.url).pathname
const modules = []
const walk = (dir) => {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) {
      if (entry.name !== "internal") walk(path)
    } else if (entry.name.endsWith(".ts") && entry.name !== "index.ts") {
      modules.push(relative(join(pkg, "src"), path).slice(0, -3))
    }
  }
}
walk(join(pkg, "src"))
const byName = new Map()
for (const module of modules.sort()) {
  const name = module.split("/").pop()
  if (byName.has(name)) throw new Error(`two modules named ${name}: ${byName.get(name)} and ${module}`)
  byName.set(name, module)
}
const json = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8"))
const exports = { ".": json.exports["."], "./internal/*": null }
for (const [name, module] of [...byName].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
  exports[`./${name}`] = {
    source: `./src/${module}.ts`,
    types: `./dist/${module}.d.ts`,
    default: `./dist/${module}.js`
  }
}
const next = `${JSON.stringify({ ...json, exports }, null, 2)}\n`
if (process.argv.includes("--check")) {
  if (next !== readFileSync(join(pkg, "package.json"), "utf8")) {
    console.error("packages/routing/package.json exports are out of date: run `npm run exports`")
    process.exit(1)
  }
} else {
  writeFileSync(join(pkg, "package.json"), next)
}
