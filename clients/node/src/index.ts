export * from "./fence.js";
export * from "./http.js";
export * from "./sql.js";
