// Package codec is the gRPC codec of raftcron's servers and clients: proto,
// as gRPC's own, but written and read without reflection for the messages
// that carry attempts in bulk (offers, polls' answers, outcomes), which
// have code generated for it by vtprotobuf (proto/buf.gen.vtproto.yaml).
//
// Reflection over a poll's answer of 1,000 offers, each with its env map,
// takes 5.0 ms to write and read back, the generated code 1.3 ms
// (BenchmarkPollAnswer). A node pays it on every poll it answers, twice
// when it forwards the poll to the leader, and on every offer its hub
// streams to a worker.
//
// The wire is proto's: any gRPC client or server reads what this codec
// writes, and the other way round. One difference is kept off the server:
// proto checks that strings are UTF-8 when it reads them, and the
// generated code does not, so a server reads requests as proto does. Only
// a client, reading a node's answers, reads without the check.
package codec

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// generated is what vtprotobuf generates for a message.
type generated interface {
	SizeVT() int
	MarshalToSizedBufferVT([]byte) (int, error)
	UnmarshalVT([]byte) error
}

// Server is the codec for grpc.ForceServerCodecV2: answers are written by
// the generated code, requests read as proto reads them.
var Server encoding.CodecV2 = wire{trusted: false}

// Client is the codec for grpc.ForceCodecV2 on connections to a node:
// requests are written and answers read by the generated code.
var Client encoding.CodecV2 = wire{trusted: true}

// wire is proto through the generated code where a message has it, and
// gRPC's proto codec for every other message. trusted: read with the
// generated code too.
type wire struct{ trusted bool }

// Name is proto's: the content-subtype stays "proto", so peers that do not
// use this codec read and write the same calls.
func (wire) Name() string { return protocodec.Name }

func (wire) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(generated)
	if !ok {
		return fallback().Marshal(v)
	}
	size := m.SizeVT()
	if mem.IsBelowBufferPoolingThreshold(size) {
		buf := make([]byte, size)
		if _, err := m.MarshalToSizedBufferVT(buf); err != nil {
			return nil, fmt.Errorf("proto: marshal %T: %w", v, err)
		}
		return mem.BufferSlice{mem.SliceBuffer(buf)}, nil
	}
	pool := mem.DefaultBufferPool()
	buf := pool.Get(size)
	if _, err := m.MarshalToSizedBufferVT((*buf)[:size]); err != nil {
		pool.Put(buf)
		return nil, fmt.Errorf("proto: marshal %T: %w", v, err)
	}
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}

func (w wire) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(generated)
	if !ok || !w.trusted {
		return fallback().Unmarshal(data, v)
	}
	// proto.Unmarshal resets the message; the generated code merges into it.
	if r, ok := v.(interface{ Reset() }); ok {
		r.Reset()
	}
	// The generated code copies what it keeps, so the buffer goes back to
	// the pool at once.
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return m.UnmarshalVT(buf.ReadOnlyData())
}

// fallback is gRPC's own proto codec, registered by its package.
func fallback() encoding.CodecV2 { return encoding.GetCodecV2(protocodec.Name) }
