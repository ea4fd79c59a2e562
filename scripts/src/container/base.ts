// The locally made base image the container check builds `FROM` (no base-image registry is
// reachable on our machines): a Debian bookworm minimal root file system made by `debootstrap
// --variant=minbase` straight into a `buildah from scratch` container, with this machine's Node
// and npm copied in where the official node images keep them (/usr/local/bin/node,
// /usr/local/lib/node_modules/npm), this machine's CA bundle (minbase has no ca-certificates) and
// npm's global settings from this machine, so npm in the build stage reaches the registry as npm
// here does. Committed as `localhost/switchyard-node-base:<node version>` and reused by later runs.
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, symlinkSync } from "node:fs"
import path from "node:path"
import { CheckFailed, must, run } from "./commands.js"

/** The base image's name for the Node running this script. */
export const baseImageName = (): string => `localhost/switchyard-node-base:${process.versions.node}`

const DEBIAN_MIRROR = "http://deb.debian.org/debian"
const PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/** Where this machine's Node and npm are. */
const hostNode = (): { readonly node: string; readonly npm: string } => {
  const node = process.execPath
  const npm = path.resolve(path.dirname(node), "../lib/node_modules/npm")
  if (!existsSync(path.join(npm, "bin/npm-cli.js"))) {
    throw new CheckFailed(`npm is not next to ${node} (looked in ${npm}); the base image needs both`)
  }
  return { node, npm }
}

/** Whether buildah already has `image`. */
export const hasImage = async (image: string, log: string): Promise<boolean> =>
  (await run("buildah", ["inspect", "--type", "image", image], { timeoutMs: 60_000, log })).code === 0

/** Copies Node, npm, the CA bundle and npm's global settings into the root file system at `root`. */
const addNode = (root: string): void => {
  const { node, npm } = hostNode()
  mkdirSync(path.join(root, "usr/local/lib/node_modules"), { recursive: true })
  cpSync(node, path.join(root, "usr/local/bin/node"))
  cpSync(npm, path.join(root, "usr/local/lib/node_modules/npm"), { recursive: true, verbatimSymlinks: true })
  symlinkSync("../lib/node_modules/npm/bin/npm-cli.js", path.join(root, "usr/local/bin/npm"))
  symlinkSync("../lib/node_modules/npm/bin/npx-cli.js", path.join(root, "usr/local/bin/npx"))
  const bundle = "/etc/ssl/certs/ca-certificates.crt"
  if (existsSync(bundle)) {
    mkdirSync(path.join(root, "etc/ssl/certs"), { recursive: true })
    cpSync(bundle, path.join(root, bundle))
  }
  // npm's global config lives in <prefix>/etc/npmrc: /usr/etc for /usr/bin/node, /usr/local/etc there.
  const npmrc = path.resolve(path.dirname(node), "../etc/npmrc")
  if (existsSync(npmrc)) {
    mkdirSync(path.join(root, "usr/local/etc"), { recursive: true })
    cpSync(npmrc, path.join(root, "usr/local/etc/npmrc"))
  }
  const archives = path.join(root, "var/cache/apt/archives")
  for (const file of existsSync(archives) ? readdirSync(archives) : []) {
    if (file.endsWith(".deb")) rmSync(path.join(archives, file))
  }
}

/**
 * Makes and commits the base image (debootstrap downloads about 40 MB of Debian packages; a few
 * minutes on a busy machine). The working container is removed whatever happens.
 */
export const makeBaseImage = async (image: string, log: string): Promise<void> => {
  const container = (await must("buildah from scratch", "buildah", ["from", "scratch"], { timeoutMs: 60_000, log }))
    .trim()
  try {
    const root = (await must("buildah mount", "buildah", ["mount", container], { timeoutMs: 60_000, log })).trim()
    await must(
      "debootstrap (Debian bookworm, minbase)",
      "debootstrap",
      ["--variant=minbase", "bookworm", root, DEBIAN_MIRROR],
      { timeoutMs: 1_200_000, log }
    )
    addNode(root)
    await must("buildah umount", "buildah", ["umount", container], { timeoutMs: 60_000, log })
    await must("buildah config", "buildah", ["config", "--env", PATH_ENV, "--cmd", "node", container], {
      timeoutMs: 60_000,
      log
    })
    await must("buildah commit (base)", "buildah", ["commit", "--quiet", container, image], { timeoutMs: 600_000, log })
  } finally {
    await run("buildah", ["rm", container], { timeoutMs: 60_000, log })
  }
}
