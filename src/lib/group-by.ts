/**
 * `items` grouped by `keyOf`, each group in the items' order; each of `keys` has a group,
 * empty when no item has it. (Node 20 has no `Map.groupBy`.)
 */
export function groupBy<T>(items: Iterable<T>, keyOf: (item: T) => string, keys: Iterable<string> = []): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const key of keys) groups.set(key, []);
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}
