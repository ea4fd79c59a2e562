import * as path from "node:path"
import type { ViteUserConfig } from "vitest/config"

/** Settings every package's vitest project shares. */
export const shared = (dir: string): ViteUserConfig => ({
  // Cross-package imports resolve to the TypeScript sources through the "source" export condition.
  ssr: { resolve: { conditions: ["source"] } },
  resolve: { conditions: ["source"] },
  esbuild: { target: "es2022" },
  test: {
    name: path.basename(dir),
    root: dir,
    include: ["test/**/*.test.ts"],
    setupFiles: [path.join(import.meta.dirname, "vitest.setup.ts")],
    ...(path.basename(dir) === "server" ? { globalSetup: [path.join(import.meta.dirname, "vitest.redis.ts")] } : {}),
    testTimeout: 20_000,
    hookTimeout: 20_000
  }
})
