// Rewrites docs/api.md from the OpenAPI document the service serves (`pnpm docs:api`): run it after
// changing a procedure's meta, a route or an error code; api-reference.test.ts fails until then.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type ApiDocument, renderApiReference } from "../src/discovery/api-reference";
import { buildOpenApiDocument } from "../src/discovery/openapi";

const target = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../docs/api.md");
// The address is a placeholder: nothing of a deployment is rendered.
const document = buildOpenApiDocument({ publicBaseUrl: "http://localhost:3000" });
writeFileSync(target, renderApiReference(document as unknown as ApiDocument));
process.stdout.write(`wrote ${path.relative(process.cwd(), target)}\n`);
