// Preloaded (`node --expose-gc --require scripts/dist/bench/heap-probe.cjs ...`) only into the server
// that `npm run bench` starts for the session-memory row: on SIGUSR2 it runs a full GC and prints
// `heap-probe {process.memoryUsage()}` on stderr, so the bench can report live heap, not just RSS.
// It changes nothing else in the server. A `.cts` source, so it compiles to a CommonJS file that
// `--require` loads before the server's ES modules.
process.on("SIGUSR2", () => {
  const gc = globalThis.gc
  if (typeof gc === "function") {
    gc()
    gc()
  }
  process.stderr.write(`heap-probe ${JSON.stringify(process.memoryUsage())}\n`)
})
