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
  },
  {
    // Translations run per request: a generator function made per call there costs a new object
    // shape per call and keeps the request alive into the old generation (docs/architecture.md,
    // "Generators on the request path"). Write the steps as a module-level generator function.
    files: ["packages/protocol/src/**/*.ts"],
    rules: {
      "no-restricted-syntax": ["error", {
        selector: "CallExpression[callee.property.name='gen'] > FunctionExpression[generator=true]",
        message: "A generator made per call: define the steps once (a module-level generator function) " +
          "and run them with `Either.gen(() => steps(...))` (docs/architecture.md)."
      }]
    }
  }
)
