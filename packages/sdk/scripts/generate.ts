import { writeFile } from "node:fs/promises";
import { generateProcessItem, PROCESS_ITEM_FILE } from "./process-item";
import { GENERATED_FILE, generateRouterTypes } from "./router-types";

await writeFile(GENERATED_FILE, generateRouterTypes());
process.stdout.write(`wrote ${GENERATED_FILE}\n`);
await writeFile(PROCESS_ITEM_FILE, generateProcessItem());
process.stdout.write(`wrote ${PROCESS_ITEM_FILE}\n`);
