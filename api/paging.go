package api

import (
	"encoding/base64"

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
