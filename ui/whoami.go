package ui

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

// Identity says whom a token belongs to. The node's ACL code provides it.
type Identity interface {
	// WhoAmI returns the name and role (management, write, read, worker or checkin)
	// of the token whose secret is bearer; bearer is "" when the request
	// carries none. With ACLs off every caller may do everything: the role
	// is management and no token is needed. Errors are gRPC statuses
	// (Unauthenticated for a missing or unknown token).
	WhoAmI(ctx context.Context, bearer string) (name, role string, err error)
}

// errMalformedAuth: an Authorization header that is not "Bearer <secret>".
var errMalformedAuth = errors.New(`authorization: want "Bearer <secret>"`)

// bearerOf is the secret of the request's Authorization header, "" when
// there is none.
func bearerOf(r *http.Request) (string, error) {
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	if h == "" {
		return "", nil
	}
	scheme, secret, ok := strings.Cut(h, " ")
	secret = strings.TrimSpace(secret)
	if !ok || !strings.EqualFold(scheme, "Bearer") || secret == "" {
		return "", errMalformedAuth
	}
	return secret, nil
}

// whoami serves GET /ui/api/whoami: {"name", "role"} of the presented
// token. Anyone may ask; the answer says nothing but what the token itself
// grants, and the pages use it only to hide what the role cannot do (the
// API refuses it anyway).
type whoami struct {
	id Identity
}

type whoamiDoc struct {
	Name string `json:"name"`
	Role string `json:"role"`
}

func (h whoami) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	secret, err := bearerOf(r)
	if err != nil {
		writeError(w, http.StatusUnauthorized, codeUnauthenticated, err.Error())
		return
	}
	name, role, err := h.id.WhoAmI(r.Context(), secret)
	if err != nil {
		writeStatus(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(whoamiDoc{Name: name, Role: role})
}
