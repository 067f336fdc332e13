import { CopyButton } from "./copy-button";

/** A snippet to copy: labelled for screen readers, scrollable, with its copy button. */
export function CodeBlock({ label, code }: { label: string; code: string }) {
  return (
    <figure className="code-block">
      <figcaption>
        <span>{label}</span>
        <CopyButton text={code} label={`Copy ${label}`} />
      </figcaption>
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard */}
      <pre tabIndex={0}>
        <code>{code}</code>
      </pre>
    </figure>
  );
}
