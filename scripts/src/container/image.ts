// The image under check: built from the repository's Dockerfile with buildah (chroot isolation,
// no pull, Docker format so HEALTHCHECK is kept), its run configuration read back, and a working
// container of it mounted on the host for the server to run in.
import * as Schema from "effect/Schema"
import { must, run } from "./commands.js"

/** The image the check builds. */
export const IMAGE = "localhost/switchyard:container-check"

/** Builds the Dockerfile at `root` `FROM` `base`; returns the milliseconds it took. */
export const buildImage = async (root: string, base: string, log: string): Promise<number> => {
  const started = Date.now()
  await must(
    "buildah bud",
    "buildah",
    [
      "bud",
      "--isolation",
      "chroot",
      "--pull=never",
      "--format",
      "docker",
      "--build-arg",
      `NODE_IMAGE=${base}`,
      "--tag",
      IMAGE,
      "--file",
      "Dockerfile",
      root
    ],
    { timeoutMs: 1_800_000, log }
  )
  return Date.now() - started
}

const StringList = Schema.NullOr(Schema.Array(Schema.String))
const ImageInspect = Schema.Struct({
  Docker: Schema.Struct({
    config: Schema.Struct({
      User: Schema.optional(Schema.String),
      Env: Schema.optional(StringList),
      Entrypoint: Schema.optional(StringList),
      Cmd: Schema.optional(StringList),
      WorkingDir: Schema.optional(Schema.String),
      ExposedPorts: Schema.optional(Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.Unknown }))),
      Healthcheck: Schema.optional(Schema.NullOr(Schema.Struct({ Test: StringList })))
    })
  })
})
const decodeInspect = Schema.decodeUnknownSync(Schema.parseJson(ImageInspect))

/** How the image says it runs. */
export interface RunConfig {
  readonly user: string
  readonly env: ReadonlyArray<string>
  readonly entrypoint: ReadonlyArray<string>
  readonly cmd: ReadonlyArray<string>
  readonly workingDir: string
  readonly exposedPorts: ReadonlyArray<string>
  /** The HEALTHCHECK's test, e.g. `["CMD", "node", "-e", …]`; empty when there is none. */
  readonly healthcheck: ReadonlyArray<string>
}

/** The image's run configuration, from `buildah inspect`. */
export const runConfig = async (image: string, log: string): Promise<RunConfig> => {
  const json = await must("buildah inspect", "buildah", ["inspect", "--type", "image", image], {
    timeoutMs: 60_000,
    log
  })
  const { config } = decodeInspect(json).Docker
  return {
    user: config.User ?? "",
    env: config.Env ?? [],
    entrypoint: config.Entrypoint ?? [],
    cmd: config.Cmd ?? [],
    workingDir: config.WorkingDir ?? "/",
    exposedPorts: Object.keys(config.ExposedPorts ?? {}),
    healthcheck: config.Healthcheck?.Test ?? []
  }
}

/** A working container of the image, mounted on the host at `root`. */
export interface Mounted {
  readonly container: string
  readonly root: string
}

/** `buildah from` + `buildah mount`; {@link unmount} undoes both. */
export const mountImage = async (image: string, log: string): Promise<Mounted> => {
  const container = (
    await must("buildah from", "buildah", ["from", "--pull-never", "--quiet", image], { timeoutMs: 120_000, log })
  ).trim()
  const mounted = await run("buildah", ["mount", container], { timeoutMs: 60_000, log })
  if (mounted.code !== 0) {
    await run("buildah", ["rm", container], { timeoutMs: 60_000, log })
    throw new Error(`buildah mount failed: ${mounted.stderr.trim()}`)
  }
  return { container, root: mounted.stdout.trim() }
}

/** Unmounts and removes the working container; returns the problems, if any (never throws). */
export const unmount = async (mounted: Mounted, log: string): Promise<ReadonlyArray<string>> => {
  const problems: Array<string> = []
  for (const args of [["umount", mounted.container], ["rm", mounted.container]]) {
    const result = await run("buildah", args, { timeoutMs: 60_000, log }).catch((error: unknown) => ({
      code: -1,
      stdout: "",
      stderr: String(error)
    }))
    if (result.code !== 0) problems.push(`buildah ${args.join(" ")}: ${result.stderr.trim()}`)
  }
  return problems
}

/** Bytes under `dir` (`du -sb`, the unpacked image when `dir` is its mounted root). */
export const diskUsage = async (dir: string, log: string): Promise<number> => {
  const out = await must("du", "du", ["-sb", dir], { timeoutMs: 120_000, log })
  return Number(out.split("\t")[0])
}
