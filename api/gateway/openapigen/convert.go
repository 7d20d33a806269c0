package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
)

// obj is a JSON object of the document being rewritten.
type obj = map[string]any

// Convert turns the generated Swagger 2.0 document into the OpenAPI 3.0
// document the gateway serves, and checks the result with kin-openapi's
// validator.
func Convert(swagger []byte) ([]byte, error) {
	var v2 openapi2.T
	if err := json.Unmarshal(swagger, &v2); err != nil {
		return nil, fmt.Errorf("reading the Swagger document: %w", err)
	}
	v3, err := openapi2conv.ToV3(&v2)
	if err != nil {
		return nil, fmt.Errorf("converting to OpenAPI 3: %w", err)
	}
	raw, err := json.Marshal(v3)
	if err != nil {
		return nil, err
	}
	var doc obj
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	for _, step := range []func(obj) error{
		renameSchemas,
		onePathPerResource,
		queryMaps,
		jobFileSchemas,
		describeOperations,
		describeDocument,
	} {
		if err := step(doc); err != nil {
			return nil, err
		}
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	out = append(out, '\n')
	if err := validate(out); err != nil {
		return nil, err
	}
	return out, nil
}

// validate loads doc as a client would and checks it against the
// OpenAPI 3 rules.
func validate(doc []byte) error {
	loaded, err := openapi3.NewLoader().LoadFromData(doc)
	if err != nil {
		return fmt.Errorf("the converted document does not load: %w", err)
	}
	if err := loaded.Validate(context.Background()); err != nil {
		return fmt.Errorf("the converted document is not valid OpenAPI 3: %w", err)
	}
	return nil
}

// schemaPrefixes are the proto packages the generator puts in front of
// message names (v1JobSpec, rpcStatus, protobufAny); the document names
// schemas by their message alone, as clients generated from it show them.
var schemaPrefixes = []string{"v1", "rpc", "protobuf"}

const schemaRefs = "#/components/schemas/"

// renameSchemas drops the package prefix of every schema name, and of
// every reference to one.
func renameSchemas(doc obj) error {
	schemas := dig(doc, "components", "schemas")
	renamed := obj{}
	names := map[string]string{}
	for name, s := range schemas {
		short := name
		for _, p := range schemaPrefixes {
			if rest, ok := strings.CutPrefix(name, p); ok && rest != "" && rest[0] >= 'A' && rest[0] <= 'Z' {
				short = rest
				break
			}
		}
		if _, taken := renamed[short]; taken {
			return fmt.Errorf("schemas %s and %s would both be named %s", names[short], name, short)
		}
		renamed[short], names[short] = s, name
	}
	dig(doc, "components")["schemas"] = renamed
	back := map[string]string{}
	for short, name := range names {
		back[schemaRefs+name] = schemaRefs + short
	}
	walk(doc, func(o obj) {
		if ref, ok := o["$ref"].(string); ok && back[ref] != "" {
			o["$ref"] = back[ref]
		}
		delete(o, "x-originalParamName")
	})
	return nil
}

// onePathPerResource serves each PUT of a resource under the path of its
// GET and DELETE. The gateway's rule names the variable after the field it
// fills (ApplyJobRequest.spec.name), but the URL is the same:
// /v1/jobs/billing. A job's body is the whole JobSpec, its name optional
// (it must match the path's when set); a channel's or notify rule's body
// is its request, whose name must match too.
func onePathPerResource(doc obj) error {
	for _, r := range []struct{ from, to, param, what string }{
		{"/v1/jobs/{spec.name}", "/v1/jobs/{name}", "spec.name", "job"},
		{"/v1/channels/{channel.name}", "/v1/channels/{name}", "channel.name", "channel"},
		{"/v1/notify-rules/{rule.name}", "/v1/notify-rules/{name}", "rule.name", "notify rule"},
	} {
		if err := mergePath(dig(doc, "paths"), r.from, r.to, r.param, r.what); err != nil {
			return err
		}
	}
	return nil
}

func mergePath(paths obj, from, to, param, what string) error {
	item, ok := paths[from].(obj)
	if !ok {
		return fmt.Errorf("no path %s to merge into %s", from, to)
	}
	target, ok := paths[to].(obj)
	if !ok {
		return fmt.Errorf("no path %s", to)
	}
	for method, op := range item {
		if _, clash := target[method]; clash {
			return fmt.Errorf("%s %s and %s %s are both routes", strings.ToUpper(method), from, strings.ToUpper(method), to)
		}
		for _, p := range list(op.(obj)["parameters"]) {
			if p := p.(obj); p["name"] == param {
				p["name"] = "name"
				p["description"] = "The " + what + "'s name: [a-z0-9][a-z0-9._-]{0,62}. A name in the body must be the same."
			}
		}
		if what == "job" {
			setJSONBody(op.(obj), obj{"$ref": schemaRefs + "JobSpec"})
		}
		target[method] = op
	}
	delete(paths, from)
	return nil
}

// queryMaps describes a map in the query string (label_selector[team]=ops)
// as OpenAPI's deepObject style, which the generator writes as one
// parameter named label_selector[string].
func queryMaps(doc obj) error {
	eachOperation(doc, func(_, _ string, op obj) {
		for _, p := range list(op["parameters"]) {
			p := p.(obj)
			name, ok := strings.CutSuffix(p["name"].(string), "[string]")
			if !ok || p["in"] != "query" {
				continue
			}
			p["name"], p["style"], p["explode"] = name, "deepObject", true
			p["schema"] = obj{"type": "object", "additionalProperties": obj{"type": "string"}}
		}
	})
	return nil
}

// describeDocument sets what the generator leaves out: the title, how to
// reach a node, and the bearer token every call takes.
func describeDocument(doc obj) error {
	doc["info"] = obj{
		"title": "raftcron",
		"description": "The HTTP/JSON face of raftcron's gRPC API (package raftcron.v1), served by every node on its " +
			"HTTP port. Job specs are in the job file's JSON form, as `raftcron job get -o json` prints them; every " +
			"other message is proto JSON with the proto's field names.",
		"version": "v1",
	}
	doc["servers"] = []any{obj{
		"url":         "{scheme}://{host}",
		"description": "A node's HTTP port: any node answers, forwarding writes to the leader.",
		"variables": obj{
			"scheme": obj{"enum": []any{"http", "https"}, "default": "http", "description": "https when the node serves TLS."},
			"host":   obj{"default": "127.0.0.1:8001", "description": "The node's --http-addr."},
		},
	}}
	components := dig(doc, "components")
	components["securitySchemes"] = obj{"bearerAuth": obj{
		"type":   "http",
		"scheme": "bearer",
		"description": "An ACL token's secret (`raftcron acl token create`), as `Authorization: Bearer <secret>`. " +
			"A node without ACLs accepts calls without one.",
	}}
	doc["security"] = bearer()
	return nil
}

func bearer() []any { return []any{obj{"bearerAuth": []any{}}} }

// errorStatuses are the HTTP statuses of the gRPC codes a call may end
// with (the gateway's mapping): 400 InvalidArgument, FailedPrecondition and
// OutOfRange; 401 Unauthenticated; 403 PermissionDenied; 404 NotFound; 409
// AlreadyExists and Aborted (a name taken, a stale version, a worker's
// attempt superseded); 429 ResourceExhausted; 500 Internal; 503
// Unavailable (no leader yet).
var errorStatuses = []string{"400", "401", "403", "404", "409", "429", "500", "503"}

// describeOperations gives every operation a one-line summary (the first
// sentence of the rpc's comment, which stays the description), the bearer
// token and the error body under each status it may answer with.
func describeOperations(doc obj) error {
	dig(doc, "components")["responses"] = obj{"Error": obj{
		"description": "An error: the gRPC status as a google.rpc.Status, its details naming what was wrong " +
			"(a BadRequest lists each field at fault; an ErrorInfo carries a reason such as NOT_LEADER).",
		"content": obj{"application/json": obj{"schema": obj{"$ref": schemaRefs + "Status"}}},
	}}
	var problems []string
	eachOperation(doc, func(path, method string, op obj) {
		// The generator splits a comment of several paragraphs into a
		// summary and a description; one of one paragraph is a summary.
		text, _ := op["summary"].(string)
		if more, _ := op["description"].(string); more != "" {
			text += "\n\n" + more
		}
		if text == "" || op["operationId"] == nil {
			problems = append(problems, strings.ToUpper(method)+" "+path)
			return
		}
		op["summary"] = summary(text)
		if op["summary"] == text {
			delete(op, "description")
		} else {
			op["description"] = text
		}
		op["security"] = bearer()
		responses := op["responses"].(obj)
		for _, code := range errorStatuses {
			if code == "404" && !strings.Contains(path, "{") {
				continue
			}
			responses[code] = obj{"$ref": "#/components/responses/Error"}
		}
		responses["default"] = obj{"$ref": "#/components/responses/Error"}
	})
	if len(problems) > 0 {
		slices.Sort(problems)
		return fmt.Errorf("no comment on the rpc (or no operationId) of %s: comment the rpc in its .proto file", strings.Join(problems, ", "))
	}
	return nil
}

// summary is the first sentence of an rpc's comment, on one line.
func summary(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if i := strings.Index(text, ". "); i >= 0 {
		return text[:i+1]
	}
	return text
}

// eachOperation calls fn for every operation, in path and method order.
func eachOperation(doc obj, fn func(path, method string, op obj)) {
	paths := dig(doc, "paths")
	for _, path := range sortedKeys(paths) {
		item := paths[path].(obj)
		for _, method := range sortedKeys(item) {
			if op, ok := item[method].(obj); ok && method != "parameters" {
				fn(path, method, op)
			}
		}
	}
}

func setJSONBody(op obj, schema obj) {
	op["requestBody"] = obj{
		"required": true,
		"content":  obj{"application/json": obj{"schema": schema}},
	}
}

// dig returns the object at path, making the missing ones.
func dig(o obj, path ...string) obj {
	for _, p := range path {
		next, ok := o[p].(obj)
		if !ok {
			next = obj{}
			o[p] = next
		}
		o = next
	}
	return o
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func sortedKeys(o obj) []string {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// walk calls fn on every object of v, depth first.
func walk(v any, fn func(obj)) {
	switch v := v.(type) {
	case obj:
		fn(v)
		for _, k := range sortedKeys(v) {
			walk(v[k], fn)
		}
	case []any:
		for _, e := range v {
			walk(e, fn)
		}
	}
}
