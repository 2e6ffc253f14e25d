package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// runRegistry serves an image registry (go-containerregistry's, blobs in memory) on a local
// address until interrupted, so clusters whose nodes run on this machine pull pushed images as a
// cloud's nodes pull from the user's registry: containerd reaches loopback registries over plain
// HTTP without configuration. It prints "<host:port>" once it listens.
func runRegistry(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("registry", flag.ExitOnError)
	listen := fl.String("listen", "127.0.0.1:0", "address to serve on")
	fl.Parse(args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveRegistry(ctx, *listen, stdout)
}

func serveRegistry(ctx context.Context, listen string, stdout io.Writer) error {
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("image registry: %w", err)
	}
	srv := &http.Server{
		Handler:           registry.New(registry.Logger(log.New(io.Discard, "", 0))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	fmt.Fprintln(stdout, l.Addr().String())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// Requests in flight may finish; a connection a client opened and never used (Go's
		// transport dials ahead) counts as busy for Shutdown, so after a while it is cut.
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := srv.Shutdown(shutdown); errors.Is(err, context.DeadlineExceeded) {
			err = srv.Close()
			if err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}
