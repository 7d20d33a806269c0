// A client generated from a node's /v1/openapi.json (openapi-typescript's
// types, openapi-fetch's calls), used as generated: it lists, creates,
// triggers and deletes a job with a bearer token. The Go test
// (server/openapi_client_test.go) generates api.d.ts, type-checks this
// file against it with tsc, and runs it against a real node.
import createClient from "openapi-fetch";
import type { components, paths } from "./api.js";

declare const process: { env: Record<string, string | undefined>; exitCode?: number };

type JobSpec = components["schemas"]["JobSpec"];

const baseUrl = process.env.RAFTCRON_URL ?? "";
const token = process.env.RAFTCRON_TOKEN ?? "";
const name = "ts-client";

let failed = 0;
function check(ok: boolean, what: string, got: unknown): void {
  if (ok) {
    console.log(`ok: ${what}`);
  } else {
    failed++;
    console.log(`FAILED: ${what}: got ${JSON.stringify(got)}`);
  }
}

async function main(): Promise<void> {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${token}` } });

  // The job file's form, as a job file would say it.
  const spec: JobSpec = {
    schedule: "@every 1h",
    http: { url: "http://127.0.0.1:1/", timeout: "30s" },
    catchup: { window: "1m", policy: "all" },
    overlap: "skip",
    delivery: "at_least_once",
    labels: { client: "typescript" },
  };

  const before = await client.GET("/v1/jobs");
  check(before.response.status === 200 && !(before.data?.jobs ?? []).some((j) => j.spec?.name === name),
    "list before: no job yet", before.data);

  const put = await client.PUT("/v1/jobs/{name}", { params: { path: { name } }, body: spec });
  const created = put.data?.job?.spec;
  check(put.data?.created === true && created?.overlap === "skip" && created?.catchup?.window === "1m0s" &&
    created?.http?.timeout === "30s", "create: the spec comes back in the job file's form", put.data ?? put.error);

  const listed = await client.GET("/v1/jobs", { params: { query: { label_selector: { client: "typescript" } } } });
  check((listed.data?.jobs ?? []).map((j) => j.spec?.name).join() === name, "list by label: the job", listed.data ?? listed.error);

  const trigger = await client.POST("/v1/jobs/{name}:trigger", { params: { path: { name } }, body: { request_id: "ts-1" } });
  check(trigger.data?.run?.job === name && trigger.data.run.kind === "FIRE_KIND_MANUAL" && trigger.data.run.attempts?.[0]?.token !== undefined,
    "trigger: a manual run with its fencing token", trigger.data ?? trigger.error);

  const del = await client.DELETE("/v1/jobs/{name}", { params: { path: { name } } });
  check(del.response.status === 200, "delete", del.error);

  const gone = await client.GET("/v1/jobs/{name}", { params: { path: { name } } });
  check(gone.response.status === 404 && gone.error?.code === 5, "get after delete: 404 with a NOT_FOUND Status", gone.error);

  const anonymous = createClient<paths>({ baseUrl });
  const refused = await anonymous.GET("/v1/jobs");
  check(refused.response.status === 401 && refused.error?.code === 16, "without a token: 401 with an UNAUTHENTICATED Status", refused.error);

  console.log(`${7 - failed} passed, ${failed} failed`);
  if (failed > 0) process.exitCode = 1;
}

await main();
