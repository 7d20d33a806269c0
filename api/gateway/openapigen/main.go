// Command openapigen writes the OpenAPI 3 document of the JSON API from the
// Swagger 2.0 document protoc-gen-openapiv2 generates from the same routes
// (proto/raftcron/v1/gateway.yaml). `make proto` runs it; api/gateway
// embeds what it writes. It converts with kin-openapi, then makes the
// document say what the gateway does (api/gateway/DESIGN.md): a
// bearer token on every call, one path per resource, errors as
// google.rpc.Status, job specs in the job file's form. Its output depends
// on its input only, so regenerating changes nothing unless a route or a
// message did.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	in := flag.String("in", "bin/openapi/openapi.swagger.json", "the Swagger 2.0 document to convert")
	out := flag.String("out", "api/gateway/openapi.json", "where to write the OpenAPI 3 document")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "openapigen:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	swagger, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	doc, err := Convert(swagger)
	if err != nil {
		return err
	}
	return os.WriteFile(out, doc, 0o644)
}
