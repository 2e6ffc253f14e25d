package main

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"sealion.dev/core/testing/syncbuffer"
)

// slowDelete is a cluster whose deletion lasts until release is closed, as a real one lasts
// tens of seconds.
type slowDelete struct {
	started, release chan struct{}
	err              error
}

func (d *slowDelete) Delete(context.Context, string) error {
	close(d.started)
	<-d.release
	return d.err
}

func TestSecondInterruptSaysWhatIsStillDeleted(t *testing.T) {
	for _, deleteErr := range []error{nil, errors.New("kubelet would not stop")} {
		d := &slowDelete{started: make(chan struct{}), release: make(chan struct{}), err: deleteErr}
		var out syncbuffer.Buffer
		ended := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // the first Ctrl-C ended the demo
		go func() {
			deleteCluster(ctx, &out, d, "the parts")
			close(ended)
		}()
		<-d.started
		// The second Ctrl-C, as a terminal sends it: deleteCluster, not the default action,
		// must get it, or the test process dies here.
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), "still deleting") && time.Now().Before(deadline) {
			if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		select {
		case <-ended:
			t.Fatal("a second interrupt ended the deletion")
		default:
		}
		if got := out.String(); !strings.Contains(got, "still deleting "+clusterName+": the parts;") {
			t.Fatalf("after a second interrupt the demo said %q", got)
		}
		close(d.release)
		<-ended
		got := out.String()
		if deleteErr == nil && !strings.HasSuffix(got, "s\n") || deleteErr != nil && !strings.Contains(got, "failed: kubelet would not stop (make demo-down retries)") {
			t.Errorf("after the deletion (error %v) the demo said %q", deleteErr, got)
		}
	}
}
