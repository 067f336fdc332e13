import { writeFile } from "node:fs/promises";
import { GENERATED_FILE, generateRouterTypes } from "./router-types";

await writeFile(GENERATED_FILE, generateRouterTypes());
process.stdout.write(`wrote ${GENERATED_FILE}\n`);
