// ESLint for the whole repository (run by `npm run lint`): typescript-eslint's recommended rules,
// and Effect's own formatting rule (dprint, the settings of the Effect repository).
import * as effectEslint from "@effect/eslint-plugin"
import tseslint from "typescript-eslint"

export default tseslint.config(
  { ignores: ["**/dist/**", "**/node_modules/**", "e2e/runs/**", "bench-results/**", "coverage/**"] },
  ...tseslint.configs.recommended,
  ...effectEslint.configs.dprint,
  {
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-non-null-assertion": "error",
      "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/array-type": ["error", { default: "generic", readonly: "generic" }],
      "@typescript-eslint/no-namespace": "off",
      "object-shorthand": "error",
      "@effect/dprint": ["error", {
        config: {
          indentWidth: 2,
          lineWidth: 120,
          semiColons: "asi",
          quoteStyle: "alwaysDouble",
          trailingCommas: "never",
          operatorPosition: "maintain",
          "arrowFunction.useParentheses": "force"
        }
      }]
    }
  }
)
