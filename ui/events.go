package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// RunWatcher opens a run watch: RunService's WatchRuns, called through the
// node's own gRPC server so that its authentication and the token's
// selector apply exactly as to any other watcher.
type RunWatcher interface {
	WatchRuns(ctx context.Context, in *pb.WatchRunsRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[pb.WatchRunsResponse], error)
}

const (
	// heartbeatEvery keeps idle streams alive through proxies and notices a
	// browser that went away without closing.
	heartbeatEvery = 15 * time.Second
	// writeTimeout bounds one write to a browser that stopped reading: the
	// watch ends instead of holding its buffer in the run hub.
	writeTimeout = 30 * time.Second
)

// runJSON writes runs as the JSON API does: the proto's field names.
var runJSON = protojson.MarshalOptions{UseProtoNames: true}

// events serves GET /ui/api/runs/events[?job=NAME]: a text/event-stream of
//
//	event: ready  once the watch is in place (list runs after it: nothing
//	              committed later is missed)
//	event: run    a run as the JSON API shows it, each time it changes
//	event: error  {code, message} when the watch ends (fell behind, node
//	              stopping); reconnect and list again
//
// The browser sends its token in the Authorization header (fetch, not
// EventSource, which cannot), so it never appears in a URL.
type events struct {
	runs      RunWatcher
	heartbeat time.Duration
}

func (h events) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secret, err := bearerOf(r)
	if err != nil {
		writeError(w, http.StatusUnauthorized, codeUnauthenticated, err.Error())
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if secret != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+secret)
	}
	stream, err := h.runs.WatchRuns(ctx, &pb.WatchRunsRequest{Job: r.URL.Query().Get("job")})
	if err != nil {
		writeStatus(w, err)
		return
	}
	// WatchRuns sends its headers once the watch is in place, or fails
	// (refused, bad filter) before that; then Header has nothing and Recv
	// says why.
	md, err := stream.Header()
	if err == nil && md == nil {
		_, err = stream.Recv()
	}
	if err != nil {
		writeStatus(w, watchEnded(err))
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Accel-Buffering", "no")
	sse := &sseWriter{w: w, rc: http.NewResponseController(w)}
	if err := sse.send("ready", []byte("{}")); err != nil {
		return
	}
	h.relay(ctx, stream, sse)
}

// relay copies the watch to the browser until either side ends.
func (h events) relay(ctx context.Context, stream grpc.ServerStreamingClient[pb.WatchRunsResponse], sse *sseWriter) {
	runs := make(chan *pb.Run)
	ended := make(chan error, 1)
	go func() {
		for {
			resp, err := stream.Recv()
			if err != nil {
				ended <- err
				return
			}
			select {
			case runs <- resp.GetRun():
			case <-ctx.Done():
				return
			}
		}
	}()
	tick := time.NewTicker(h.heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case err := <-ended:
			_ = sse.sendError(err)
			return
		case run := <-runs:
			data, err := runJSON.Marshal(run)
			if err == nil {
				err = sse.send("run", data)
			}
			if err != nil {
				return
			}
		case <-tick.C:
			if err := sse.comment("ping"); err != nil {
				return
			}
		}
	}
}

// watchEnded is the status of a watch that ended with err; a watch that
// ends without an error has been closed by the node.
func watchEnded(err error) error {
	if errors.Is(err, io.EOF) {
		return status.Error(codes.Unavailable, "the watch ended; reconnect")
	}
	return err
}

// sseWriter writes server-sent events, flushing each one.
type sseWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

// send writes one event. data must hold no newline: protojson and
// encoding/json write none without indentation.
func (s *sseWriter) send(event string, data []byte) error {
	return s.write(fmt.Sprintf("event: %s\ndata: %s\n\n", event, data))
}

func (s *sseWriter) comment(text string) error {
	return s.write(": " + text + "\n\n")
}

func (s *sseWriter) sendError(err error) error {
	st := status.Convert(watchEnded(err))
	data, _ := json.Marshal(errorDoc{Code: st.Code(), Message: st.Message()})
	return s.send("error", data)
}

func (s *sseWriter) write(frame string) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := io.WriteString(s.w, frame); err != nil {
		return err
	}
	return s.rc.Flush()
}
