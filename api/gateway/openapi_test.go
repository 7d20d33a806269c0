package gateway_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// served is the OpenAPI document as the gateway serves it, loaded as a
// client generator loads it.
func served(t *testing.T) *openapi3.T {
	t.Helper()
	e := start(t)
	resp, err := http.Get(e.url + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatalf("the served document does not load: %v", err)
	}
	return doc
}

func TestOpenAPIDocumentIsValidOpenAPI3(t *testing.T) {
	if err := served(t).Validate(context.Background()); err != nil {
		t.Fatalf("the served document is not valid OpenAPI 3: %v", err)
	}
}

// Every operation says what it does and who may call it, and answers its
// errors as google.rpc.Status.
func TestEveryOperationHasASummaryAnIDTheBearerTokenAndTheErrorBody(t *testing.T) {
	doc := served(t)
	scheme := doc.Components.SecuritySchemes["bearerAuth"]
	if scheme == nil || scheme.Value.Type != "http" || scheme.Value.Scheme != "bearer" {
		t.Fatalf("security scheme bearerAuth: %+v, want http bearer", scheme)
	}
	status := doc.Components.Schemas["Status"]
	if status == nil || status.Value.Properties["details"] == nil || status.Value.Properties["code"] == nil {
		t.Fatalf("schema Status: %+v, want google.rpc.Status with its details", status)
	}
	ids := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := method + " " + path
			if op.Summary == "" || op.OperationID == "" || ids[op.OperationID] {
				t.Errorf("%s: summary %q, operationId %q: want both, the id unique", where, op.Summary, op.OperationID)
			}
			ids[op.OperationID] = true
			if op.Security == nil || len(*op.Security) != 1 || (*op.Security)[0]["bearerAuth"] == nil {
				t.Errorf("%s: security %v, want bearerAuth", where, op.Security)
			}
			for _, code := range []string{"400", "401", "403", "500", "503", "default"} {
				r := op.Responses.Value(code)
				if r == nil || r.Value.Content.Get("application/json") == nil ||
					r.Value.Content.Get("application/json").Schema.Ref != "#/components/schemas/Status" {
					t.Errorf("%s: response %s is not the Status body", where, code)
				}
			}
		}
	}
}

// The JobSpec schema is the job file's form the gateway speaks.
func TestTheJobSpecSchemaIsTheJobFileForm(t *testing.T) {
	doc := served(t)
	put := doc.Paths.Value("/v1/jobs/{name}").Put
	if put == nil || put.RequestBody.Value.Content.Get("application/json").Schema.Ref != "#/components/schemas/JobSpec" {
		t.Fatal("PUT /v1/jobs/{name} does not take a JobSpec")
	}
	spec := doc.Components.Schemas["JobSpec"].Value
	enum := func(ref *openapi3.SchemaRef) []string {
		var out []string
		for _, v := range ref.Value.Enum {
			out = append(out, v.(string))
		}
		return out
	}
	if got := enum(spec.Properties["overlap"]); !slices.Equal(got, []string{"skip", "allow", "buffer_one", "cancel_other"}) {
		t.Errorf("overlap: %v, want the job file's names", got)
	}
	catchup := spec.Properties["catchup"].Value
	if got := enum(catchup.Properties["policy"]); !slices.Equal(got, []string{"all", "latest", "none"}) {
		t.Errorf("catchup.policy: %v, want the job file's names", got)
	}
	if w := catchup.Properties["window"].Value; !w.Type.Is("string") || w.Example != "1m30s" {
		t.Errorf("catchup.window: %+v, want a Go duration string", w)
	}
	if h := spec.Properties["history_limit"].Value; !h.Type.Is("integer") {
		t.Errorf("history_limit: %+v, want an integer", h)
	}
	if got := enum(spec.Properties["delivery"]); !slices.Equal(got, []string{"at_least_once", "at_most_once"}) {
		t.Errorf("delivery: %v, want the job file's names", got)
	}
}
