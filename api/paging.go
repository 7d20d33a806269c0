package api

import (
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/jobspec"
)

const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

// pageSize applies the documented default and cap.
func pageSize(n uint32) int {
	switch {
	case n == 0:
		return defaultPageSize
	case n > maxPageSize:
		return maxPageSize
	default:
		return int(n)
	}
}

// A page token is the last name of the previous page, base64url-encoded so
// that clients treat it as opaque and the format can change.
func encodePageToken(after string) string {
	if after == "" {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(after))
}

// decodePageToken refuses anything encodePageToken cannot have produced.
func decodePageToken(token string) (string, error) {
	if token == "" {
		return "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || jobspec.ValidateName(string(raw)) != nil {
		return "", fieldError("page_token", "invalid page token: pass the next_page_token of the previous response unchanged")
	}
	return string(raw), nil
}

// A run page token is the key of the last run looked at, "<created at in
// Unix ns>/<run id>", base64url-encoded like a job page token.
func encodeRunPageToken(k fsm.RunKey) string {
	if k.ID == "" {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(k.CreatedAt, 10) + "/" + k.ID))
}

// decodeRunPageToken refuses anything encodeRunPageToken cannot have
// produced.
func decodeRunPageToken(token string) (fsm.RunKey, error) {
	if token == "" {
		return fsm.RunKey{}, nil
	}
	bad := fieldError("page_token", "invalid page token: pass the next_page_token of the previous response unchanged")
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return fsm.RunKey{}, bad
	}
	at, id, ok := strings.Cut(string(raw), "/")
	created, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || validRunID(id) != nil {
		return fsm.RunKey{}, bad
	}
	return fsm.RunKey{CreatedAt: created, ID: id}, nil
}
