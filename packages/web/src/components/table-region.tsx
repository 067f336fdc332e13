import type { ReactNode } from "react";

/** A table that may scroll sideways on a narrow screen: a named region a keyboard can reach and scroll. */
export function TableRegion({ label, children }: { label: string; children: ReactNode }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard
    <section className="table-wrap" tabIndex={0} aria-label={label}>
      {children}
    </section>
  );
}
