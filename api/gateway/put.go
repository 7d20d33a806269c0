package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// jobsPath is the collection PUT /v1/jobs/{name} writes into.
const jobsPath = Prefix + "jobs/"

// checkPutName refuses a PUT /v1/jobs/{name} whose body names another job.
// The gateway fills spec.name from the path after decoding the body, so
// such a request would otherwise write the job of the path with a spec
// meant for another one, silently. A body without a name takes the path's.
func checkPutName(mux *runtime.ServeMux, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := putJobName(r)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			writeError(mux, w, r, status.Errorf(codes.InvalidArgument, "reading the body: %v", err))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var probe struct {
			Name *string `json:"name"`
		}
		if json.Unmarshal(body, &probe) == nil && probe.Name != nil && *probe.Name != "" && *probe.Name != name {
			rule := fmt.Sprintf("the body names job %q and the path job %q: they must be the same", *probe.Name, name)
			writeError(mux, w, r, fieldError("spec.name", rule))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// putJobName is the {name} of a PUT /v1/jobs/{name}.
func putJobName(r *http.Request) (string, bool) {
	if r.Method != http.MethodPut || !strings.HasPrefix(r.URL.Path, jobsPath) {
		return "", false
	}
	name := strings.TrimPrefix(r.URL.Path, jobsPath)
	if name == "" || strings.ContainsAny(name, "/:") {
		return "", false
	}
	return name, true
}

func writeError(mux *runtime.ServeMux, w http.ResponseWriter, r *http.Request, err error) {
	_, out := runtime.MarshalerForRequest(mux, r)
	runtime.HTTPError(r.Context(), mux, out, w, r, err)
}

// fieldError is InvalidArgument with a BadRequest detail, as the gRPC
// services answer for a broken field.
func fieldError(field, rule string) error {
	st := status.New(codes.InvalidArgument, field+": "+rule)
	if d, err := st.WithDetails(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
		{Field: field, Description: rule},
	}}); err == nil {
		st = d
	}
	return st.Err()
}
