import { createInterface } from "node:readline";

/** Reads a secret from the terminal without echoing it, or one line from piped stdin. */
export async function promptSecret(question: string): Promise<string> {
  const input = process.stdin;
  if (!input.isTTY) {
    const lines = createInterface({ input });
    for await (const line of lines) {
      lines.close();
      return line;
    }
    return "";
  }
  process.stderr.write(question);
  input.setRawMode(true);
  input.resume();
  input.setEncoding("utf8");
  return new Promise((resolve, reject) => {
    let value = "";
    const onData = (char: string) => {
      if (char === "\r" || char === "\n" || char === "\u0004") {
        input.setRawMode(false);
        input.pause();
        input.off("data", onData);
        process.stderr.write("\n");
        resolve(value);
      } else if (char === "\u0003") {
        input.setRawMode(false);
        reject(new Error("cancelled"));
      } else if (char === "\u007f") {
        value = value.slice(0, -1);
      } else {
        value += char;
      }
    };
    input.on("data", onData);
  });
}
