import type { ReactNode } from "react";
import { plural } from "./format";

/** One figure of the account in a `<dl className="stats">`: its name, its value, and a line on what it means. */
export function Stat(props: { label: string; value: ReactNode; note: ReactNode; testId?: string; valueClass?: string }) {
  return (
    <div className="stat">
      <dt>{props.label}</dt>
      <dd>
        <span className={`stat-value${props.valueClass ? ` ${props.valueClass}` : ""}`} data-testid={props.testId}>
          {props.value}
        </span>
        <span className="muted">{props.note}</span>
      </dd>
    </div>
  );
}

/** A plan's limits as the dashboard says them. */
export function limitsText(limits: { per_minute: number; concurrent: number }): string {
  return `${plural(limits.per_minute, "image")} a minute, ${limits.concurrent} at once.`;
}
