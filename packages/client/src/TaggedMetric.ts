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

/**
 * The handles of one metric, as a tree of its label values in the labels' order: each level is
 * one label (its name fixed by the first label set that reached it), each edge a value. A lookup
 * is one `Map.get` per label and no key string; a label set whose names differ from the tree's at
 * some level (the same metric tagged with other labels) is served uncached.
 */
interface Level {
  /** The label this level's edges are values of; undefined until a label set reaches it. */
  name: string | undefined
  readonly values: Map<string, Level>
  /** The handle of the label set that ends here. */
  handle: unknown
}

interface Tree {
  readonly root: Level
  /** Handles made so far (at most {@link maxLabelSets}). */
  size: number
}

const level = (): Level => ({ name: undefined, values: new Map(), handle: undefined })

const trees = new WeakMap<object, Tree>()

const make = <Type, In, Out>(
  metric: Metric.Metric<Type, In, Out>,
  labels: Readonly<Record<string, string>>
): Metric.Metric<Type, In, Out> =>
  Metric.taggedWithLabels(metric, Object.entries(labels).map(([name, value]) => MetricLabel.make(name, value)))

/**
 * `metric` tagged with `labels` (in their insertion order), the same handle for the same labels.
 */
export const tagged = <Type, In, Out>(
  metric: Metric.Metric<Type, In, Out>,
  labels: Readonly<Record<string, string>>
): Metric.Metric<Type, In, Out> => {
  let tree = trees.get(metric)
  if (tree === undefined) {
    tree = { root: level(), size: 0 }
    trees.set(metric, tree)
  }
  let at = tree.root
  for (const name in labels) {
    if (at.name === undefined) at.name = name
    else if (at.name !== name) return make(metric, labels)
    const value = labels[name] ?? ""
    let next = at.values.get(value)
    if (next === undefined) {
      if (tree.size >= maxLabelSets) return make(metric, labels)
      next = level()
      at.values.set(value, next)
    }
    at = next
  }
  // Only `make` of this very metric is stored at a level of its tree, so a handle found is one.
  if (at.handle !== undefined) return at.handle as Metric.Metric<Type, In, Out>
  if (tree.size >= maxLabelSets) return make(metric, labels)
  const made = make(metric, labels)
  at.handle = made
  tree.size++
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
