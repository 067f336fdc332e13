export { type RetouchApp, type Role, startRetouch } from "./app";
export { type HttpServer, startHttpServer } from "./http/http-server";
export { openConfiguredDatabase } from "./postgres/database";
export { type EmbeddedPostgres, startEmbeddedPostgres } from "./postgres/embedded-postgres";
