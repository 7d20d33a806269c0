// Package ui serves raftcron's web UI under /ui/ on a node's HTTP port:
// pages embedded in the binary that call the JSON API (/v1/) with the
// signed-in token, and the two endpoints of its own that the API cannot
// give a browser: who a token belongs to (so the pages hide what its role
// cannot do) and the run changes as server-sent events.
//
// Who may call what: the pages themselves are public (they hold no data);
// /ui/api/whoami answers anyone about the token they present and nothing
// else; /ui/api/runs/events is a WatchRuns call made with the caller's
// token, so it needs what WatchRuns needs (role read, scoped to the
// token's selector).
package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"html"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// Prefix is where the UI is mounted on the HTTP port.
const Prefix = "/ui/"

// versionMark in index.html is replaced by the node's build version.
const versionMark = "%RAFTCRON_VERSION%"

//go:embed assets
var assets embed.FS

// ErrConfig: a required part of Config is missing.
var ErrConfig = errors.New("ui: incomplete config")

// Config is what the UI is built from.
type Config struct {
	// Identity names the holder of a token; required.
	Identity Identity
	// Runs opens run watches under the caller's token; required.
	Runs RunWatcher
	// Version is the node's build version, shown on the overview.
	Version string
}

// New returns the handler of everything under Prefix; mount it at Prefix.
func New(c Config) (http.Handler, error) {
	if c.Identity == nil || c.Runs == nil {
		return nil, ErrConfig
	}
	files, err := loadAssets(c.Version)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+Prefix+"api/whoami", whoami{c.Identity})
	mux.Handle("GET "+Prefix+"api/runs/events", events{runs: c.Runs, heartbeat: heartbeatEvery})
	mux.HandleFunc(Prefix+"api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, codeNotFound, "no such UI endpoint: "+r.URL.Path)
	})
	mux.Handle(Prefix, files)
	return secured(mux), nil
}

// assetFiles serves the embedded files with an ETag, so that a browser
// revalidates cheaply and never runs the pages of an older build.
type assetFiles struct {
	byPath map[string]asset
}

type asset struct {
	body        []byte
	etag        string
	contentType string
}

func loadAssets(version string) (assetFiles, error) {
	root, err := fs.Sub(assets, "assets")
	if err != nil {
		return assetFiles{}, err
	}
	out := assetFiles{byPath: map[string]asset{}}
	err = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		if p == "index.html" {
			body = bytes.ReplaceAll(body, []byte(versionMark), []byte(html.EscapeString(version)))
		}
		sum := sha256.Sum256(body)
		out.byPath[p] = asset{body: body, etag: `"` + hex.EncodeToString(sum[:8]) + `"`, contentType: contentType(p)}
		return nil
	})
	return out, err
}

func contentType(p string) string {
	switch path.Ext(p) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	default:
		return "text/plain; charset=utf-8"
	}
}

func (a assetFiles) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the UI's pages are read with GET", http.StatusMethodNotAllowed)
		return
	}
	p := strings.TrimPrefix(r.URL.Path, Prefix)
	if p == "" {
		p = "index.html"
	}
	f, ok := a.byPath[p]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("ETag", f.etag)
	// Revalidate every time: an upgraded node must not serve pages that
	// expect the older API from a browser's cache.
	h.Set("Cache-Control", "no-cache")
	if r.Header.Get("If-None-Match") == f.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	_, _ = w.Write(f.body)
}

// contentSecurityPolicy lets the pages load only their own files and talk
// only to their own node: no inline script, no other origin, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func secured(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}
