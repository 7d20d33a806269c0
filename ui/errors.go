package ui

import (
	"encoding/json"
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The UI's own endpoints answer errors in the shape of the JSON API's
// (a gRPC status: code and message), so the pages read one kind of error.
const (
	codeNotFound        = codes.NotFound
	codeUnauthenticated = codes.Unauthenticated
)

type errorDoc struct {
	Code    codes.Code `json:"code"`
	Message string     `json:"message"`
}

func writeError(w http.ResponseWriter, httpStatus int, code codes.Code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(httpStatus)
	_ = json.NewEncoder(w).Encode(errorDoc{Code: code, Message: msg})
}

// writeStatus answers err, a gRPC status from the services, with the HTTP
// status the JSON API gives the same code.
func writeStatus(w http.ResponseWriter, err error) {
	st := status.Convert(err)
	writeError(w, httpStatusOf(st.Code()), st.Code(), st.Message())
}

func httpStatusOf(c codes.Code) int {
	switch c {
	case codes.InvalidArgument, codes.OutOfRange:
		return http.StatusBadRequest
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.NotFound:
		return http.StatusNotFound
	case codes.FailedPrecondition:
		return http.StatusBadRequest
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.Canceled:
		return 499 // client closed the request, as grpc-gateway answers
	default:
		return http.StatusInternalServerError
	}
}
