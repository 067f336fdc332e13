import { type ReactNode, type RefObject, useId, useRef, useState } from "react";
import { ErrorNote } from "./error-note";

export interface Confirmation<T> {
  /** What the person is asked about; undefined while the dialog is closed. */
  subject: T | undefined;
  /** Opens the dialog about `subject`. */
  ask(subject: T): void;
  /** Closes it (after the action succeeded, or on Cancel). */
  close(): void;
  dialog: RefObject<HTMLDialogElement | null>;
  clear(): void;
}

/** The state of a ConfirmDialog: which row it asks about, and opening and closing it. */
export function useConfirmation<T>(): Confirmation<T> {
  const dialog = useRef<HTMLDialogElement>(null);
  const [subject, setSubject] = useState<T | undefined>();
  return {
    subject,
    ask: (next) => {
      setSubject(next);
      dialog.current?.showModal();
    },
    close: () => dialog.current?.close(),
    dialog,
    clear: () => setSubject(undefined),
  };
}

/**
 * A modal question before something that cannot be taken back (revoking a
 * key, disconnecting an app): what will happen, the action's error if it
 * failed, the action's button and Cancel.
 */
export function ConfirmDialog<T>(props: {
  confirmation: Confirmation<T>;
  title: ReactNode;
  children: ReactNode;
  confirmLabel: string;
  error: unknown;
  pending: boolean;
  onConfirm(subject: T): void;
}) {
  const { confirmation } = props;
  const titleId = useId();
  return (
    <dialog ref={confirmation.dialog} aria-labelledby={titleId} onClose={confirmation.clear}>
      <h2 id={titleId}>{props.title}</h2>
      {props.children}
      <ErrorNote error={props.error} />
      <div className="actions">
        <button
          type="button"
          className="button-danger"
          disabled={confirmation.subject === undefined || props.pending}
          onClick={() => confirmation.subject !== undefined && props.onConfirm(confirmation.subject)}
        >
          {props.confirmLabel}
        </button>
        <button type="button" className="button-quiet" onClick={confirmation.close}>
          Cancel
        </button>
      </div>
    </dialog>
  );
}
