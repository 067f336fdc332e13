import { useInfiniteQuery } from "@tanstack/react-query";
import { Link, useSearchParams } from "wouter";
import { trpc } from "../api/trpc";
import { DashboardLayout } from "../components/dashboard-layout";
import { ErrorNote } from "../components/error-note";
import { formatDate } from "../components/format";
import { useTitle } from "../components/use-title";
import { WORKFLOW_TITLES } from "../components/workflows";

const PAGE_SIZE = 20;
const STATUS_LABELS: Record<string, string> = { pending: "Running", done: "Done", error: "Failed" };

type StatusFilter = "pending" | "done" | "error";
type WorkflowFilter = "background_removal" | "object_removal" | "generative_edit";
const DAY = /^\d{4}-\d{2}-\d{2}$/;

/**
 * The filters live in the URL (`?status=error&workflow=…&from=…&to=…`), so a
 * filtered list can be bookmarked, shared and reloaded; the service filters,
 * so every page of the list is filtered. Values the page does not know are
 * ignored rather than sent.
 */
function useJobFilters() {
  const [params, setParams] = useSearchParams();
  const status = params.get("status");
  const workflow = params.get("workflow");
  const from = params.get("from");
  const to = params.get("to");
  const filters = {
    ...(status && status in STATUS_LABELS ? { status: status as StatusFilter } : {}),
    ...(workflow && workflow in WORKFLOW_TITLES ? { workflow: workflow as WorkflowFilter } : {}),
    ...(from && DAY.test(from) ? { from } : {}),
    ...(to && DAY.test(to) && !(from && DAY.test(from) && to < from) ? { to } : {}),
  };
  const set = (name: "status" | "workflow" | "from" | "to", value: string) =>
    setParams(
      (previous) => {
        const next = new URLSearchParams(previous);
        if (value) next.set(name, value);
        else next.delete(name);
        return next;
      },
      { replace: true },
    );
  return { filters, set, clear: () => setParams(new URLSearchParams(), { replace: true }) };
}

export function JobsPage() {
  useTitle("Jobs");
  const { filters, set, clear } = useJobFilters();
  const filtered = Object.keys(filters).length > 0;
  const jobs = useInfiniteQuery(
    trpc.jobs.list.infiniteQueryOptions(
      { limit: PAGE_SIZE, ...filters },
      {
        getNextPageParam: (page) => page.next_cursor ?? undefined,
        // Running jobs settle on their own: look again while any is pending.
        refetchInterval: (query) =>
          query.state.data?.pages.some((page) => page.jobs.some((job) => job.status === "pending")) ? 3000 : false,
      },
    ),
  );
  const rows = jobs.data?.pages.flatMap((page) => page.jobs) ?? [];
  return (
    <DashboardLayout>
      <h1>Jobs</h1>
      <p className="muted">
        Your edits, newest first. Results are kept for a day; download the ones you want to keep. Days are in UTC.
      </p>
      {/* Labels beside their fields, not around them: a select's options would join its name. */}
      <form className="filters" aria-label="Filter the jobs" onSubmit={(event) => event.preventDefault()}>
        <FilterSelect
          name="status"
          label="Status"
          anyLabel="Any status"
          options={STATUS_LABELS}
          value={filters.status}
          onChange={(value) => set("status", value)}
        />
        <FilterSelect
          name="workflow"
          label="Workflow"
          anyLabel="Any workflow"
          options={WORKFLOW_TITLES}
          value={filters.workflow}
          onChange={(value) => set("workflow", value)}
        />
        <div className="filter">
          <label htmlFor="filter-from">From</label>
          <input id="filter-from" type="date" value={filters.from ?? ""} onChange={(event) => set("from", event.target.value)} />
        </div>
        <div className="filter">
          <label htmlFor="filter-to">To</label>
          <input id="filter-to" type="date" value={filters.to ?? ""} onChange={(event) => set("to", event.target.value)} />
        </div>
        {filtered ? (
          <button type="button" className="button-quiet button-small" onClick={clear}>
            Clear the filters
          </button>
        ) : null}
      </form>
      <ErrorNote error={jobs.error} prefix="Your jobs could not be loaded:" />
      {jobs.isPending ? <p className="loading">Loading your jobs…</p> : null}
      {jobs.isSuccess && rows.length === 0 && filtered ? <p>No jobs match these filters.</p> : null}
      {jobs.isSuccess && rows.length === 0 && !filtered ? (
        <p>
          No jobs yet. <Link href="/dashboard/playground">Run your first edit</Link>.
        </p>
      ) : null}
      {rows.length > 0 ? (
        <ul className="jobs">
          {rows.map((job) => (
            <li key={job.id} className="job">
              <div className="job-thumb">
                {job.result_url ? (
                  <img src={job.result_url} alt={`Result of “${job.prompt}”`} loading="lazy" />
                ) : (
                  <span className="job-thumb-empty" aria-hidden="true" />
                )}
              </div>
              <div className="job-body">
                <p className="job-prompt">{job.prompt}</p>
                <p className="muted">
                  <span className={`badge badge-${job.status}`}>{STATUS_LABELS[job.status] ?? job.status}</span>{" "}
                  {formatDate(job.created_at)} · <code>{job.id}</code>
                </p>
                {job.status === "error" ? (
                  <p className="job-failure">
                    {job.error_code ? <code>{job.error_code}</code> : null} {job.error_message ?? "The edit failed."} The credit
                    was refunded.
                  </p>
                ) : null}
              </div>
              {job.result_url ? (
                <a className="button-link button-small" href={job.result_url} download>
                  Download<span className="visually-hidden"> the result of {job.id}</span>
                </a>
              ) : null}
            </li>
          ))}
        </ul>
      ) : null}
      {jobs.hasNextPage ? (
        <button type="button" onClick={() => jobs.fetchNextPage()} disabled={jobs.isFetchingNextPage}>
          {jobs.isFetchingNextPage ? "Loading…" : "Load more"}
        </button>
      ) : null}
    </DashboardLayout>
  );
}

/** One of the listing's filters as a select, its label beside it (not around it: the options would join its name). */
function FilterSelect(props: {
  name: string;
  label: string;
  anyLabel: string;
  options: Record<string, string>;
  value: string | undefined;
  onChange(value: string): void;
}) {
  const id = `filter-${props.name}`;
  return (
    <div className="filter">
      <label htmlFor={id}>{props.label}</label>
      <select id={id} value={props.value ?? ""} onChange={(event) => props.onChange(event.target.value)}>
        <option value="">{props.anyLabel}</option>
        {Object.entries(props.options).map(([value, label]) => (
          <option key={value} value={value}>
            {label}
          </option>
        ))}
      </select>
    </div>
  );
}
