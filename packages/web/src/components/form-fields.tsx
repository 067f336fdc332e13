import type { InputHTMLAttributes, ReactNode } from "react";
import { ErrorNote } from "./error-note";

type InputProps = Omit<InputHTMLAttributes<HTMLInputElement>, "value" | "onChange" | "children">;

/** A text input inside its label: the label's text is the input's accessible name. */
export function TextField({
  label,
  value,
  onValue,
  ...input
}: InputProps & { label: string; value: string; onValue: (value: string) => void }) {
  return (
    <label>
      {label}
      <input {...input} value={value} onChange={(event) => onValue(event.target.value)} />
    </label>
  );
}

/** The account forms' email address field. */
export function EmailField({ value, onValue }: { value: string; onValue: (value: string) => void }) {
  return <TextField label="Email" name="email" type="email" autoComplete="email" required value={value} onValue={onValue} />;
}

/** A form's end: why its last sending failed, then the button that sends it (off while it is sent). */
export function FormSubmit({ call, children }: { call: { error: unknown; isPending: boolean }; children: ReactNode }) {
  return (
    <>
      <ErrorNote error={call.error} />
      <button type="submit" disabled={call.isPending}>
        {children}
      </button>
    </>
  );
}
