/**
 * Tagged metric handles made once per label set and reused, for metrics updated on every request.
 *
 * `Metric.tagged` / `Metric.taggedWithLabels` build a new metric on each call, and each update of
 * such a metric builds a new `MetricKey` (hashed, then looked up in the registry). A handle made
 * once with all its labels in one `taggedWithLabels` array hits the base metric's hook cache
 * instead, as long as the fiber carries no `Effect.tagMetrics` labels (none of ours do; with such
 * labels it is still correct, only not faster). The series are the same as with `Metric.tagged`:
 * same names, same labels in the same order.
 */
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"

/**
 * Most label sets cached per metric. Label values are bounded (model ids from the config, fixed
 * outcome sets), so this is a safety net: past it, handles are built per call as before.
 */
export const maxLabelSets = 4096

const caches = new WeakMap<object, Map<string, unknown>>()

/**
 * `metric` tagged with `labels` (in their insertion order), the same handle for the same labels.
 */
export const tagged = <Type, In, Out>(
  metric: Metric.Metric<Type, In, Out>,
  labels: Readonly<Record<string, string>>
): Metric.Metric<Type, In, Out> => {
  let cache = caches.get(metric)
  if (cache === undefined) {
    cache = new Map()
    caches.set(metric, cache)
  }
  let key = ""
  for (const name in labels) key += `${name}\u0000${labels[name]}\u0000`
  const known = cache.get(key) as Metric.Metric<Type, In, Out> | undefined
  if (known !== undefined) return known
  const made = Metric.taggedWithLabels(
    metric,
    Object.entries(labels).map(([name, value]) => MetricLabel.make(name, value))
  )
  if (cache.size < maxLabelSets) cache.set(key, made)
  return made
}

/**
 * Updates `metric` tagged with `labels` (the handle of {@link tagged}) at once, for a batch of
 * updates inside one `Effect.sync`. The same series as `Metric.update`, for fibers that carry no
 * `Effect.tagMetrics` labels (none of ours do).
 */
export const unsafeUpdate = <Type, In, Out>(
  metric: Metric.Metric<Type, In, Out>,
  labels: Readonly<Record<string, string>>,
  value: In
): void => {
  tagged(metric, labels).unsafeUpdate(value, [])
}
