package cli

import (
	"context"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
)

// unaryCall runs one call of the service newClient builds, bounded by
// --timeout, and describes its error in one readable line.
func unaryCall[C, T any](cmd *cobra.Command, o *clientOptions, subject string,
	newClient func(grpc.ClientConnInterface) C, fn func(context.Context, C) (T, error)) (T, error) {
	var res T
	err := invoke(cmd.Context(), o, subject, func(ctx context.Context, conn grpc.ClientConnInterface) error {
		var err error
		res, err = fn(ctx, newClient(conn))
		return err
	})
	return res, err
}

// invoke dials, runs fn bounded by --timeout and describes its error.
func invoke(ctx context.Context, o *clientOptions, subject string, fn func(context.Context, grpc.ClientConnInterface) error) error {
	conn, err := o.dial()
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	callCtx, cancel := o.callContext(ctx)
	defer cancel()
	if err := fn(callCtx, conn); err != nil {
		return o.call(subject).describe(err)
	}
	return nil
}
