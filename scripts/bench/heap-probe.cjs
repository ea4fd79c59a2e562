// Preloaded (`node --expose-gc --require scripts/bench/heap-probe.cjs ...`) only into the server
// that `npm run bench` starts for the session-memory row: on SIGUSR2 it runs a full GC and prints
// `heap-probe {process.memoryUsage()}` on stderr, so the bench can report live heap, not just RSS.
// It changes nothing else in the server.
"use strict"
process.on("SIGUSR2", () => {
  if (typeof global.gc === "function") {
    global.gc()
    global.gc()
  }
  process.stderr.write(`heap-probe ${JSON.stringify(process.memoryUsage())}\n`)
})
