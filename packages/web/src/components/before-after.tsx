import { useId, useState } from "react";

/**
 * The original and the result in one frame, a slider deciding how much of
 * each shows. The result's side is a layer of its own with a checkerboard
 * under the result: a cut-out's transparent background shows as squares, not
 * as the original photo underneath (which made "remove the background" look
 * like the photo at every position).
 */
export function BeforeAfter({ before, after, width, height }: { before: string; after: string; width: number; height: number }) {
  const [split, setSplit] = useState(50);
  const sliderId = useId();
  return (
    <figure className="compare">
      <div className="compare-frame" style={{ aspectRatio: `${width} / ${height}` }}>
        <img src={before} alt="Original" className="compare-image" />
        <div className="compare-after checkerboard" data-testid="compare-after" style={{ clipPath: `inset(0 0 0 ${split}%)` }}>
          <img src={after} alt="Result" className="compare-image" />
        </div>
        <span className="compare-line" style={{ left: `${split}%` }} aria-hidden="true" />
      </div>
      <figcaption>
        <label htmlFor={sliderId}>Compare: original on the left, result on the right</label>
        <input
          id={sliderId}
          type="range"
          min={0}
          max={100}
          value={split}
          onChange={(event) => setSplit(Number(event.target.value))}
        />
      </figcaption>
    </figure>
  );
}
