package main

import (
	"context"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
)

// unaryCall runs one call of the service newClient builds, bounded by
// --timeout, and describes its error in one readable line.
func unaryCall[C, T any](cmd *cobra.Command, o *clientOptions, subject string,
	newClient func(grpc.ClientConnInterface) C, fn func(context.Context, C) (T, error)) (T, error) {
	var zero T
	conn, err := o.dial()
	if err != nil {
		return zero, err
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := o.callContext(cmd.Context())
	defer cancel()
	res, err := fn(ctx, newClient(conn))
	if err != nil {
		return zero, o.call(subject).describe(err)
	}
	return res, nil
}
