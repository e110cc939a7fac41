/**
 * Stores a test file opens and closes after each test (their runtimes first).
 *
 * @example
 * const track = closedAfterEach();
 * const store = track(openStore('memory:'));
 */
import { afterEach } from 'vitest';
import { getRuntime, type Store } from '../../src/index.ts';

/** Registers an `afterEach` that closes every store passed to the returned function. */
export function closedAfterEach(): (store: Store) => Store {
  const opened: Store[] = [];
  afterEach(async () => {
    for (const store of opened.splice(0)) {
      await getRuntime(store).close();
      await store.close();
    }
  });
  return (store) => {
    opened.push(store);
    return store;
  };
}
