package main

import (
	"strings"
	"testing"
)

func TestSummaryIsTheFirstSentenceOnOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"ListRuns returns the newest runs first.":                           "ListRuns returns the newest runs first.",
		"CancelRun cancels an open run. It ends\nCANCELLED.":                "CancelRun cancels an open run.",
		"TriggerJob commits a manual run now, with its own\nslot identity.": "TriggerJob commits a manual run now, with its own slot identity.",
	} {
		if got := summary(in); got != want {
			t.Errorf("summary(%q) = %q, want %q", in, got, want)
		}
	}
}

// An rpc on HTTP without a comment would be an operation without a
// summary: the conversion fails, naming it.
func TestAnUncommentedRPCFailsTheConversion(t *testing.T) {
	doc := obj{"paths": obj{
		"/v1/runs/{id}": obj{"get": obj{"operationId": "RunService_GetRun", "responses": obj{}}},
		"/v1/runs":      obj{"get": obj{"operationId": "RunService_ListRuns", "summary": "ListRuns lists.", "responses": obj{}}},
	}}
	err := describeOperations(doc)
	if err == nil || !strings.Contains(err.Error(), "GET /v1/runs/{id}") || strings.Contains(err.Error(), "GET /v1/runs,") {
		t.Fatalf("describeOperations: %v, want an error naming GET /v1/runs/{id} alone", err)
	}
}

// A schema rewritten into the job file's form must not describe proto JSON
// elsewhere.
func TestASchemaSharedWithProtoJSONIsRefused(t *testing.T) {
	w := fileSchemas{schemas: obj{
		"JobSpec": obj{"properties": obj{"overlap": obj{"$ref": schemaRefs + "Overlap"}}},
		"Overlap": obj{"type": "string"},
		"Run":     obj{"properties": obj{"overlap": obj{"$ref": schemaRefs + "Overlap"}}},
	}, done: map[string]bool{"JobSpec": true, "Overlap": true}}
	err := w.unshared(obj{"paths": obj{}})
	if err == nil || !strings.Contains(err.Error(), "Overlap") {
		t.Fatalf("unshared: %v, want Overlap refused", err)
	}
	delete(w.schemas, "Run")
	if err := w.unshared(obj{"paths": obj{}}); err != nil {
		t.Fatalf("unshared without another use: %v", err)
	}
}

// PUT /v1/jobs/{spec.name} joins GET and DELETE /v1/jobs/{name}, and so
// on for channels and notify rules.
func TestOnePathPerResource(t *testing.T) {
	doc := obj{"paths": obj{
		"/v1/jobs/{name}": obj{"get": obj{}, "delete": obj{}},
		"/v1/jobs/{spec.name}": obj{"put": obj{"parameters": []any{
			obj{"name": "spec.name", "in": "path"},
		}}},
		"/v1/channels/{name}":          obj{"get": obj{}, "delete": obj{}},
		"/v1/channels/{channel.name}":  obj{"put": obj{"parameters": []any{obj{"name": "channel.name", "in": "path"}}}},
		"/v1/notify-rules/{name}":      obj{"delete": obj{}},
		"/v1/notify-rules/{rule.name}": obj{"put": obj{"parameters": []any{obj{"name": "rule.name", "in": "path"}}}},
	}}
	if err := onePathPerResource(doc); err != nil {
		t.Fatal(err)
	}
	paths := dig(doc, "paths")
	if _, ok := paths["/v1/jobs/{spec.name}"]; ok || dig(paths, "/v1/jobs/{name}", "put") == nil {
		t.Fatalf("paths %v, want PUT under /v1/jobs/{name} only", paths)
	}
	if p := list(dig(paths, "/v1/jobs/{name}", "put")["parameters"])[0].(obj); p["name"] != "name" {
		t.Fatalf("PUT's path parameter %v, want name", p)
	}
	if _, ok := paths["/v1/channels/{channel.name}"]; ok || dig(paths, "/v1/notify-rules/{name}", "put") == nil {
		t.Fatalf("paths %v, want the channel and rule PUTs under their {name} paths", paths)
	}
}
