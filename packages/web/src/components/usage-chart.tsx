import { useQuery } from "@tanstack/react-query";
import { useId } from "react";
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { trpc } from "../api/trpc";
import { ErrorNote } from "./error-note";
import { plural } from "./format";
import { workflowTitle } from "./workflows";

/** One colour per workflow, each at least 3:1 against the card's white (WCAG's non-text contrast). */
const WORKFLOW_COLOURS: Record<string, string> = {
  background_removal: "#1f2a44",
  object_removal: "#b33a26",
  generative_edit: "#1d6b3a",
};

const shortDate = (date: string) =>
  new Date(`${date}T00:00:00Z`).toLocaleDateString(undefined, { day: "numeric", month: "short", timeZone: "UTC" });

/**
 * Images made per day over the last 30 days, stacked by workflow (recharts).
 * The drawing is one image for assistive technology, named by a sentence
 * that sums it up; the same numbers are a table under it, for anyone who
 * prefers reading them.
 */
export function UsageChart() {
  const usage = useQuery(trpc.jobs.usage.queryOptions());
  const captionId = useId();
  if (usage.error) return <ErrorNote error={usage.error} prefix="Your usage could not be loaded:" />;
  if (!usage.data) return <p className="loading">Loading your usage…</p>;
  const { days, workflows } = usage.data;
  const total = days.reduce((sum, day) => sum + day.total, 0);
  const busiest = days.reduce((best, day) => (day.total > best.total ? day : best), days[0] ?? { date: "", total: 0 });
  const summary =
    total === 0
      ? "No images made in the last 30 days."
      : `${plural(total, "image")} made in the last 30 days, most on ${shortDate(busiest.date)} (${busiest.total}): ${workflows
          .map((workflow) => `${workflowTitle(workflow)} ${days.reduce((sum, day) => sum + day.by_workflow[workflow], 0)}`)
          .join(", ")}.`;
  const rows = days.map((day) => ({ label: shortDate(day.date), ...day.by_workflow }));
  const activeDays = days.filter((day) => day.total > 0);
  return (
    <figure className="usage" aria-labelledby={captionId}>
      <figcaption id={captionId}>
        <strong>Images per day, last 30 days.</strong> <span data-testid="usage-summary">{summary}</span>
      </figcaption>
      <div className="usage-chart" role="img" aria-label={summary} data-testid="usage-chart">
        <ResponsiveContainer width="100%" height={240}>
          <BarChart data={rows} accessibilityLayer={false} margin={{ top: 8, right: 8, bottom: 0, left: -16 }}>
            <CartesianGrid strokeDasharray="3 3" vertical={false} stroke="#d9dce3" />
            <XAxis dataKey="label" tick={{ fill: "#515a6b", fontSize: 12 }} interval="preserveStartEnd" minTickGap={24} />
            <YAxis allowDecimals={false} tick={{ fill: "#515a6b", fontSize: 12 }} />
            <Tooltip />
            <Legend />
            {workflows.map((workflow) => (
              <Bar
                key={workflow}
                dataKey={workflow}
                name={workflowTitle(workflow)}
                stackId="images"
                fill={WORKFLOW_COLOURS[workflow] ?? "#515a6b"}
                isAnimationActive={false}
              />
            ))}
          </BarChart>
        </ResponsiveContainer>
      </div>
      <details className="usage-table">
        <summary>The same as a table</summary>
        {activeDays.length === 0 ? (
          <p className="muted">No images yet.</p>
        ) : (
          <table>
            <caption className="visually-hidden">
              Images made per day and workflow, last 30 days (days without any left out)
            </caption>
            <thead>
              <tr>
                <th scope="col">Day</th>
                {workflows.map((workflow) => (
                  <th key={workflow} scope="col">
                    {workflowTitle(workflow)}
                  </th>
                ))}
                <th scope="col">Total</th>
              </tr>
            </thead>
            <tbody>
              {activeDays.map((day) => (
                <tr key={day.date}>
                  <th scope="row">
                    <time dateTime={day.date}>{shortDate(day.date)}</time>
                  </th>
                  {workflows.map((workflow) => (
                    <td key={workflow}>{day.by_workflow[workflow]}</td>
                  ))}
                  <td>{day.total}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </details>
    </figure>
  );
}
