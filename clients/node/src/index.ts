export * from "./fence.js";
export * from "./http.js";
export * from "./sql.js";
export { ProtocolError } from "./client.js";
export * from "./worker.js";
