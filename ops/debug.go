package ops

import (
	"net/http"
	"net/http/pprof"
)

// DebugHandler serves /debug/pprof/. Profiles show memory contents and
// command lines and cost CPU, so it lives on its own address (--debug-addr,
// off by default), never on the open ops port.
func DebugHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// DebugHTTPServer serves h with a bound on slow headers only: a CPU profile
// or trace writes for as long as it was asked to record (pprof refuses a
// duration beyond the server's write timeout).
func DebugHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, IdleTimeout: idleTimeout}
}
