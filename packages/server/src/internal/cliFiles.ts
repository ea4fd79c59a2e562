/**
 * The files the `switchyard` commands read before doing anything else: the deployment TOML
 * (`--config`), the TLS certificate and key (`--tls-cert`, `--tls-key`) and the pricing file
 * (`--pricing-file`), each failing with the one line the command prints.
 *
 * @internal
 */
import * as DeploymentToml from "@switchyard-ts/config/DeploymentToml"
import * as Pricing from "@switchyard-ts/routing/Pricing"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { readFile } from "node:fs/promises"
import { createSecureContext } from "node:tls"
import type * as Server from "../Server.js"

/** The config file could not be read or is invalid; `message` is the one line to print. */
export class ConfigFileError extends Schema.TaggedError<ConfigFileError>()("ConfigFileError", {
  message: Schema.String
}) {}

/** A `--tls-cert` / `--tls-key` file could not be read, or the pair is not a usable certificate and key. */
export class TlsFileError extends Schema.TaggedError<TlsFileError>()("TlsFileError", {
  message: Schema.String
}) {}

const reason = (error: unknown, otherwise: string) => error instanceof Error ? error.message : otherwise

/** Read and validate the deployment file; failures carry the one-line message of docs/configuration.md. */
export const loadDeployment = (path: string) =>
  Effect.gen(function*() {
    const text = yield* Effect.tryPromise({
      try: () => readFile(path, "utf8"),
      catch: (error) =>
        new ConfigFileError({ message: `failed to read server config ${path}: ${reason(error, "read error")}` })
    })
    return yield* DeploymentToml.parse(text).pipe(
      Effect.mapError((error) => new ConfigFileError({ message: `invalid server config ${path}: ${error.message}` }))
    )
  })

/**
 * The certificate and key of `--tls-cert` / `--tls-key`: both files read, and the pair checked by
 * building a TLS context from it, so a missing file, a malformed PEM or a key that does not match
 * the certificate fails before anything is bound. Messages name the files, never their contents.
 */
export const loadTls = (files: { readonly cert: string; readonly key: string }) =>
  Effect.gen(function*() {
    const read = (flag: string, file: string) =>
      Effect.tryPromise({
        try: () => readFile(file),
        catch: (error) =>
          new TlsFileError({ message: `failed to read ${flag} ${file}: ${reason(error, "read error")}` })
      })
    const material: Server.TlsMaterial = {
      cert: yield* read("--tls-cert", files.cert),
      key: yield* read("--tls-key", files.key)
    }
    yield* Effect.try({
      try: () => createSecureContext(material),
      catch: (error) =>
        new TlsFileError({
          message: `invalid TLS certificate or key (--tls-cert ${files.cert}, --tls-key ${files.key}): ${
            reason(error, "unusable")
          }`
        })
    })
    return material
  })

/**
 * Read and validate the pricing file (`--pricing-file`): a `Pricing.PricingError` with the
 * compatible system's one line (`failed to read pricing file <path>: …`, `invalid pricing file
 * <path>: …`, `duplicate pricing model "<id>"`, `invalid pricing for model "<id>": …` naming the key).
 */
export const loadPricing = (path: string): Effect.Effect<Pricing.Table, Pricing.PricingError> =>
  Effect.tryPromise({
    try: () => readFile(path, "utf8"),
    catch: (error) =>
      new Pricing.PricingError({ message: `failed to read pricing file ${path}: ${reason(error, "read error")}` })
  }).pipe(Effect.flatMap((text) => Pricing.parse(text, path)))
