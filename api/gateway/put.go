package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/jobfile"
)

// jobsPath is the collection PUT /v1/jobs/{name} writes into.
const jobsPath = Prefix + "jobs/"

// checkPutBody reads the job of a PUT /v1/jobs/{name} before the gateway
// does, to answer as the gRPC services do: a body that is no job in the
// job file's form is InvalidArgument with a BadRequest detail naming the
// field (the gateway's own decoding error carries the text only), and so
// is a body that names another job than the path. The gateway fills
// spec.name from the path after decoding the body, so such a request
// would otherwise write the job of the path with a spec meant for another
// one, silently. A body without a name takes the path's.
func checkPutBody(mux *runtime.ServeMux, next http.Handler) http.Handler {
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
		if len(bytes.TrimSpace(body)) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		spec, err := jobfile.FromJSON(body)
		if err != nil {
			writeError(mux, w, r, bodyError(err))
			return
		}
		if spec.GetName() != "" && spec.GetName() != name {
			rule := fmt.Sprintf("the body names job %q and the path job %q: they must be the same", spec.GetName(), name)
			writeError(mux, w, r, fieldError("spec.name", rule))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bodyError is a job file error as InvalidArgument naming the field.
func bodyError(err error) error {
	var fe *jobfile.FieldError
	if errors.As(err, &fe) && fe.Field != "" {
		return fieldError(fe.Field, fe.Rule)
	}
	return fieldError("spec", err.Error())
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
