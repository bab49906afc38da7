/** A gate for race tests: hold one call while others run. */

/** A gate: `wait()` resolves once `open()` is called; `reached` resolves once something waits. */
export function latch() {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  let reach!: () => void;
  const reached = new Promise<void>((resolve) => {
    reach = resolve;
  });
  return {
    open,
    reached,
    wait: async () => {
      reach();
      await gate;
    },
  };
}
