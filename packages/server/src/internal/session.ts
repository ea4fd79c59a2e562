/**
 * The session identity of a request, from the headers coding agents send: the one parser lives in
 * `@switchyard-ts/routing/SessionIdentity` (routes read the same headers for sub-agent dispatch
 * and `session_final`).
 *
 * @internal
 */
export { sessionHeader, sessionIdOf } from "@switchyard-ts/routing/SessionIdentity"
