// Package drain carries a server's shutdown to the handlers of its requests, so that those that
// never end on their own (watches) can end cleanly when it stops, rather than be cut.
package drain

import "context"

type key struct{}

// WithSignal returns ctx carrying stopping, which the server closes when it starts shutting down.
func WithSignal(ctx context.Context, stopping <-chan struct{}) context.Context {
	return context.WithValue(ctx, key{}, stopping)
}

// Signal returns the channel of ctx's server, closed when it starts shutting down; nil, which
// never closes, when the server has none.
func Signal(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(key{}).(<-chan struct{})
	return ch
}
