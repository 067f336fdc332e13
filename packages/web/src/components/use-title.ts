import { useEffect } from "react";

/** Each page names itself in the tab and for screen readers. */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · Retouch`;
  }, [title]);
}
