// Child processes of the bench and soak scripts: tracked by PID and always stopped (SIGKILL as the
// last resort) when the script exits, on errors and on SIGINT/SIGTERM; plus small promise helpers.

const children = new Set()

/** Stop every tracked child now (also done on exit). */
export const killAll = () => {
  for (const child of children) {
    try {
      process.kill(child.pid, "SIGKILL")
    } catch {}
  }
  children.clear()
}

process.on("exit", killAll)
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    killAll()
    process.exit(130)
  })
}

/** Track a spawned child so it is stopped whatever happens to this script. */
export const track = (child) => {
  children.add(child)
  child.once("exit", () => children.delete(child))
  return child
}

/** Resolve after `ms` milliseconds. */
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** `promise`, or a rejection naming `what` after `ms` milliseconds. */
export const withTimeout = (promise, ms, what) =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms)
    promise.then((v) => (clearTimeout(timer), resolve(v)), (e) => (clearTimeout(timer), reject(e)))
  })
