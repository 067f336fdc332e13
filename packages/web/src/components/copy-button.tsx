import { useState } from "react";

/** Copies `text`; says so, or says to copy by hand where the clipboard is not offered (plain http). */
export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [state, setState] = useState<"idle" | "copied" | "failed">("idle");
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setState("copied");
    } catch {
      setState("failed");
    }
    setTimeout(() => setState("idle"), 2500);
  };
  return (
    <span className="copy">
      <button type="button" className="button-small" onClick={copy}>
        {label}
      </button>
      <span className="copy-state" aria-live="polite">
        {state === "copied" ? "Copied" : state === "failed" ? "Select the text and copy it" : ""}
      </span>
    </span>
  );
}
