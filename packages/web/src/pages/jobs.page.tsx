import { useInfiniteQuery } from "@tanstack/react-query";
import { Link } from "wouter";
import { trpc } from "../api/trpc";
import { DashboardLayout } from "../components/dashboard-layout";
import { ErrorNote } from "../components/error-note";
import { formatDate } from "../components/format";
import { useTitle } from "../components/use-title";

const PAGE_SIZE = 20;
const STATUS_LABELS: Record<string, string> = { pending: "Running", done: "Done", error: "Failed" };

export function JobsPage() {
  useTitle("Jobs");
  const jobs = useInfiniteQuery(
    trpc.jobs.list.infiniteQueryOptions(
      { limit: PAGE_SIZE },
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
      <p className="muted">Your edits, newest first. Results are kept for a day; download the ones you want to keep.</p>
      <ErrorNote error={jobs.error} prefix="Your jobs could not be loaded:" />
      {jobs.isPending ? <p className="loading">Loading your jobs…</p> : null}
      {jobs.isSuccess && rows.length === 0 ? (
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
