import { imageToBase64, JobFailedError, OUTPUT_FORMATS, type OutputFormat, Retouch } from "@retouch/sdk";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { inferRouterInputs } from "@trpc/server";
import { type DragEvent, type FormEvent, useEffect, useRef, useState } from "react";
import { refusalMessage } from "../api/refusal-messages";
import type { AppRouter } from "../api/router";
import { trpc, trpcClient } from "../api/trpc";
import { BeforeAfter } from "../components/before-after";
import { SelectionOverlay, useClickSelection } from "../components/click-selector";
import { DashboardLayout } from "../components/dashboard-layout";
import { ErrorNote } from "../components/error-note";
import { formatDuration } from "../components/format";
import { MaskPainter, type MaskPainterHandle } from "../components/mask-painter";
import { useTitle } from "../components/use-title";

const ACCEPTED = ["image/jpeg", "image/png", "image/webp"];
/** What "Remove the selection" submits: with a mask, the router reads it as "remove what the mask marks". */
const REMOVE_SELECTION = "remove the selection";
/** Offered first whenever the server removes backgrounds: the plainest thing to try. */
const REMOVE_BACKGROUND = "remove the background";
/** Between status checks when polling (the stream's fallback), at the pace the service asks of any client. */
const POLL_MS = 2000;
// Keyed by the SDK's format type, so a format the service adds shows here once it has a name (the type check asks).
const FORMAT_LABELS: Record<OutputFormat, string> = { jpeg: "JPEG", png: "PNG", webp: "WebP" };

type PlaygroundInput = inferRouterInputs<AppRouter>["playground"]["submit"];

interface Picture {
  file: File;
  url: string;
  width: number;
  height: number;
}

interface Outcome {
  jobId: string;
  url: string;
  format: string;
  width: number;
  height: number;
  processingTimeMs: number | null;
  creditsRemaining: number;
}

/** Reads the picture's size in the browser, so the mask is painted at the picture's own resolution. */
function loadPicture(file: File): Promise<Picture> {
  const url = URL.createObjectURL(file);
  return new Promise((resolve, reject) => {
    const image = new Image();
    image.onload = () => resolve({ file, url, width: image.naturalWidth, height: image.naturalHeight });
    image.onerror = () => {
      URL.revokeObjectURL(url);
      reject(new Error("This file could not be read as a picture. Choose a JPEG, PNG or WebP image."));
    };
    image.src = url;
  });
}

export function PlaygroundPage() {
  useTitle("Playground");
  const queryClient = useQueryClient();
  const capabilities = useQuery(trpc.service.capabilities.queryOptions(undefined, { staleTime: 300_000 }));
  const selectionStatus = useQuery(trpc.selection.status.queryOptions(undefined, { staleTime: 300_000 }));
  const canSelect = selectionStatus.data?.available === true;
  const [picture, setPicture] = useState<Picture | undefined>();
  const [pictureError, setPictureError] = useState<string | undefined>();
  const [prompt, setPrompt] = useState("");
  const [format, setFormat] = useState<"" | OutputFormat>("");
  const [quality, setQuality] = useState(90);
  const [masking, setMasking] = useState(false);
  const [selecting, setSelecting] = useState(false);
  const [excluding, setExcluding] = useState(false);
  const [brush, setBrush] = useState(0.05);
  const [dragging, setDragging] = useState(false);
  const [progress, setProgress] = useState<{ jobId: string; creditsRemaining: number } | undefined>();
  const painter = useRef<MaskPainterHandle>(null);
  const selection = useClickSelection(picture?.file, selecting && canSelect);
  const abort = useRef<AbortController | undefined>(undefined);

  useEffect(() => () => abort.current?.abort(), []);
  useEffect(() => () => (picture ? URL.revokeObjectURL(picture.url) : undefined), [picture]);

  const choose = async (file: File | undefined) => {
    setPictureError(undefined);
    run.reset();
    setProgress(undefined);
    if (!file) return;
    if (!ACCEPTED.includes(file.type)) {
      setPictureError(`${file.name} is not a JPEG, PNG or WebP picture.`);
      return;
    }
    try {
      setPicture(await loadPicture(file));
    } catch (error) {
      setPictureError((error as Error).message);
    }
  };

  const refreshAccount = () =>
    Promise.all([
      queryClient.invalidateQueries({ queryKey: trpc.account.get.queryKey() }),
      queryClient.invalidateQueries({ queryKey: trpc.jobs.list.pathKey() }),
    ]);

  const run = useMutation({
    mutationFn: async (asked: string | undefined): Promise<Outcome> => {
      if (!picture) throw new Error("Choose a picture first.");
      abort.current?.abort();
      const controller = new AbortController();
      abort.current = controller;
      const signal = controller.signal;
      const input: PlaygroundInput = { image: await imageToBase64(picture.file, fetch, signal), prompt: asked ?? prompt };
      if (format) input.format = format;
      if (format !== "png") input.quality = quality;
      if (selecting) {
        // The selection is the job's mask, as a painted one is (the service resizes it to the picture).
        const mask = selection.toPng();
        if (!mask) throw new Error("Click the object to select it first, or turn off “Select by clicking”.");
        input.mask = await imageToBase64(mask, fetch, signal);
      } else if (masking) {
        const mask = await painter.current?.toPng();
        if (mask) input.mask = await imageToBase64(mask, fetch, signal);
      }
      // The signed-in session, no API key: the service checks that the request comes from its own pages.
      const submission = await trpcClient.playground.submit.mutate(input, { signal });
      const jobId = submission.job_id;
      setProgress({ jobId, creditsRemaining: submission.credits_remaining });
      void refreshAccount();
      // The SDK's one wait, on the signed-in session: the progress stream (the page's cookie goes with it), polling
      // playground.job where the stream is refused or cut (the status endpoint takes a key; the playground has none).
      const waiter = new Retouch({ baseUrl: window.location.origin, maxRetries: 2 });
      const status = await waiter.waitForJob(jobId, {
        signal,
        intervalMs: POLL_MS,
        poll: (pollSignal) => trpcClient.playground.job.query({ job_id: jobId }, { signal: pollSignal }),
      });
      // A failed job's credit is back: the balance after the refund.
      if (status.credits_remaining !== undefined) setProgress({ jobId, creditsRemaining: status.credits_remaining });
      if (status.status === "error") throw JobFailedError.fromStatus(jobId, status);
      const result = await trpcClient.playground.result.query({ job_id: jobId }, { signal });
      if ("status" in result) throw new Error(`Job ${jobId} is still running.`);
      return {
        jobId: result.job_id,
        url: result.url,
        format: result.format,
        width: result.width,
        height: result.height,
        processingTimeMs: result.processing_time_ms,
        creditsRemaining: result.credits_remaining,
      };
    },
    onSettled: () => refreshAccount(),
  });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setProgress(undefined);
    run.mutate(undefined);
  };
  const removeSelection = () => {
    setPrompt(REMOVE_SELECTION);
    setProgress(undefined);
    run.mutate(REMOVE_SELECTION);
  };
  const onDrop = (event: DragEvent) => {
    event.preventDefault();
    setDragging(false);
    void choose(event.dataTransfer.files[0]);
  };

  const removesBackgrounds = capabilities.data?.workflows.some((workflow) => workflow.name === "background_removal") ?? false;
  const examples = capabilities.data
    ? [
        ...new Set([
          ...(removesBackgrounds ? [REMOVE_BACKGROUND] : []),
          ...capabilities.data.instructions.flatMap((instruction) => instruction.examples.slice(0, 1)),
        ]),
      ].slice(0, 8)
    : [];
  const limits = capabilities.data?.limits;
  const failure = run.error instanceof JobFailedError ? run.error : undefined;
  const outcome = run.data;
  const credits = outcome?.creditsRemaining ?? progress?.creditsRemaining;

  const preview = picture ? (
    outcome ? (
      <section aria-labelledby="result-title" className="result">
        <h2 id="result-title">Result</h2>
        <BeforeAfter before={picture.url} after={outcome.url} width={outcome.width} height={outcome.height} />
        <p>
          {outcome.width} × {outcome.height} {outcome.format.toUpperCase()}, made in {formatDuration(outcome.processingTimeMs)}.{" "}
          <a className="button-link button-small" href={outcome.url} download={`${outcome.jobId}.${outcome.format}`}>
            Download
          </a>
        </p>
      </section>
    ) : (
      <section aria-labelledby="picture-title">
        <h2 id="picture-title" className="visually-hidden">
          Your picture
        </h2>
        <div className="canvas-stack" style={{ aspectRatio: `${picture.width} / ${picture.height}` }}>
          <img src={picture.url} alt={`Your picture, ${picture.file.name}`} />
          {selecting && canSelect ? (
            <SelectionOverlay selection={selection} width={picture.width} height={picture.height} exclude={excluding} />
          ) : masking ? (
            <MaskPainter ref={painter} width={picture.width} height={picture.height} brush={brush} />
          ) : null}
        </div>
        <p className="hint">
          {picture.file.name}, {picture.width} × {picture.height}
        </p>
      </section>
    )
  ) : (
    <div className="preview-empty" aria-hidden="true">
      Your picture appears here
    </div>
  );

  return (
    <DashboardLayout>
      <h1>Playground</h1>
      <p className="muted">Edits here run on your account, one credit each, refunded if an edit fails.</p>
      <div className="playground">
        <form className="playground-controls" onSubmit={submit}>
          {/* biome-ignore lint/a11y/noStaticElementInteractions: a drop target for the pointer; the file input inside it is the way in for everyone else */}
          <div
            className={dragging ? "dropzone dropzone-active" : "dropzone"}
            onDragOver={(event) => {
              event.preventDefault();
              setDragging(true);
            }}
            onDragLeave={() => setDragging(false)}
            onDrop={onDrop}
          >
            <label>
              Image
              <input
                name="image"
                type="file"
                accept={ACCEPTED.join(",")}
                aria-describedby="image-hint"
                onChange={(event) => void choose(event.target.files?.[0])}
              />
            </label>
            <p id="image-hint" className="hint">
              Drop a picture here or choose one: JPEG, PNG or WebP
              {limits
                ? `, up to ${Math.round(limits.max_image_bytes / 1024 / 1024)} MB and ${Math.round(limits.max_image_pixels / 1e6)} megapixels`
                : ""}
              .
            </p>
            {pictureError ? (
              <p className="note note-error" role="alert">
                {pictureError}
              </p>
            ) : null}
          </div>

          {/* Not wrapped in its label: a textarea's text is the label's text too, and the name would grow with it. */}
          <div className="field">
            <label htmlFor="prompt">Prompt</label>
            <textarea
              id="prompt"
              name="prompt"
              required
              maxLength={2000}
              rows={2}
              placeholder="make it black and white"
              value={prompt}
              onChange={(event) => setPrompt(event.target.value)}
            />
          </div>
          {examples.length > 0 ? (
            <div className="examples">
              <p id="examples-label" className="hint">
                Works on this server:
              </p>
              <ul aria-labelledby="examples-label">
                {examples.map((example) => (
                  <li key={example}>
                    <button type="button" className="chip" onClick={() => setPrompt(example)}>
                      {example}
                    </button>
                  </li>
                ))}
              </ul>
            </div>
          ) : null}

          <div className="row">
            <label>
              Format
              <select value={format} onChange={(event) => setFormat(event.target.value as "" | OutputFormat)}>
                <option value="">Automatic (JPEG; PNG for cut-outs)</option>
                {OUTPUT_FORMATS.map((choice) => (
                  <option key={choice} value={choice}>
                    {FORMAT_LABELS[choice]}
                  </option>
                ))}
              </select>
            </label>
            <label>
              <span>
                Quality <output>{format === "png" ? "lossless" : quality}</output>
              </span>
              <input
                type="range"
                min={1}
                max={100}
                value={quality}
                disabled={format === "png"}
                onChange={(event) => setQuality(Number(event.target.value))}
              />
            </label>
          </div>

          {picture && !outcome ? (
            <fieldset className="mask-tools">
              <legend>Mask (optional)</legend>
              <label className="check">
                <input
                  type="checkbox"
                  checked={masking}
                  onChange={(event) => {
                    setMasking(event.target.checked);
                    if (event.target.checked) setSelecting(false);
                  }}
                />
                Paint the area to edit
              </label>
              <label className="check">
                <input
                  type="checkbox"
                  checked={selecting && canSelect}
                  disabled={!canSelect}
                  aria-describedby="select-hint"
                  onChange={(event) => {
                    setSelecting(event.target.checked);
                    if (event.target.checked) setMasking(false);
                  }}
                />
                Select by clicking
              </label>
              {selectionStatus.data && !canSelect ? (
                <p id="select-hint" className="hint">
                  {selectionStatus.data.reason}
                </p>
              ) : (
                <p id="select-hint" className="hint">
                  Click an object to select it, free of charge. The selection and the brush are not combined: use one or the
                  other.
                </p>
              )}
              {selecting && canSelect ? (
                <div className="selection-tools">
                  <div className="row">
                    <button
                      type="button"
                      className="button-quiet button-small"
                      aria-pressed={excluding}
                      onClick={() => setExcluding(!excluding)}
                    >
                      {excluding ? "Clicks leave out" : "Clicks add"}
                    </button>
                    <button
                      type="button"
                      className="button-quiet button-small"
                      disabled={selection.points.length === 0}
                      onClick={() => selection.undo()}
                    >
                      Undo the last point
                    </button>
                    <button
                      type="button"
                      className="button-quiet button-small"
                      disabled={selection.points.length === 0}
                      onClick={() => selection.clear()}
                    >
                      Clear the selection
                    </button>
                  </div>
                  <p className="hint">
                    A click adds to the object; Shift-click or Alt-click (or “Clicks leave out”) leaves that part out.
                  </p>
                  <p aria-live="polite" data-testid="selection-summary">
                    {selection.busy === "preparing"
                      ? "Preparing the picture for selection…"
                      : selection.busy === "selecting"
                        ? "Selecting…"
                        : selection.selected
                          ? `Selected ${Math.round(selection.selected.coverage * 100)} % of the picture with ${selection.points.length} ${selection.points.length === 1 ? "point" : "points"}.`
                          : selection.ready
                            ? "Click the object to select it."
                            : ""}
                  </p>
                  <ErrorNote error={selection.error} prefix="The selection did not work:" />
                  <button
                    type="button"
                    disabled={!selection.selected || run.isPending || selection.busy !== undefined}
                    onClick={removeSelection}
                  >
                    Remove the selection
                  </button>
                </div>
              ) : null}
              {masking ? (
                <>
                  <label>
                    Brush size
                    <input
                      type="range"
                      min={0.01}
                      max={0.2}
                      step={0.01}
                      value={brush}
                      onChange={(event) => setBrush(Number(event.target.value))}
                    />
                  </label>
                  <button type="button" className="button-quiet button-small" onClick={() => painter.current?.clear()}>
                    Clear the mask
                  </button>
                  <p className="hint">Only the painted area changes: with “remove …”, what is under the paint is removed.</p>
                </>
              ) : null}
            </fieldset>
          ) : null}

          <div className="actions">
            <button type="submit" disabled={!picture || !prompt.trim() || run.isPending}>
              Run edit
            </button>
            {outcome ? (
              <button type="button" className="button-quiet" onClick={() => run.reset()}>
                Back to the picture
              </button>
            ) : null}
          </div>

          <div aria-live="polite" className="run-status">
            {run.isPending && progress ? (
              <p className="note">
                Job <code>{progress.jobId}</code> is running…
              </p>
            ) : null}
            {run.isPending && !progress ? <p className="note">Sending the picture…</p> : null}
            {credits !== undefined ? (
              <p>
                Credits remaining: <strong data-testid="playground-credits">{credits}</strong>
              </p>
            ) : null}
          </div>
          {failure ? (
            <p className="note note-error" role="alert">
              {failure.message}
            </p>
          ) : run.error ? (
            <p className="note note-error" role="alert">
              {refusalMessage(run.error)}
            </p>
          ) : null}
        </form>
        <div className="playground-preview">{preview}</div>
      </div>
    </DashboardLayout>
  );
}
