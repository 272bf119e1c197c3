/**
 * Wait for a promise, but at most `ms`. The timer is cleared as soon as the promise settles: a
 * bare `Promise.race` with a `setTimeout` leaves the timer pending, which keeps a Node process
 * (a test run, a CLI) alive until it fires — 15 s after every stop during a restart.
 */
export function atMost<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
