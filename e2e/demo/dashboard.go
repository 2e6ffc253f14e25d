package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"sealion.dev/e2e/steps"
)

// scrapeInterval is how often the demo scrapes the Concierge while its user logs in: the logins
// take ten seconds or so, and Grafana's $__rate_interval (four intervals) must be as short for
// them to show apart.
const scrapeInterval = 2 * time.Second

// recording scrapes the Concierge's /metrics as Prometheus would through the chart's
// ServiceMonitor (every pod, with a token allowed get /metrics alone) into dir, one
// UNIXMILLIS-POD.txt file per pod and scrape, for tools/dashboardrender.
type recording struct {
	dir    string
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	scrapes int
	err     error
}

// startRecording scrapes twice before it returns (a rate needs two: the dashboard's zero before
// the logins), then every scrapeInterval until stop.
func startRecording(ctx context.Context, cfg *envconf.Config, dir string) (*recording, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		return nil, err
	}
	inst, err := steps.Discover(ctx, cfg.KubeconfigFile())
	if err != nil {
		return nil, err
	}
	token, err := steps.MetricsReaderToken(ctx, kube, true)
	if err != nil {
		return nil, err
	}
	target := steps.ServerMetrics("Concierge", inst.Concierge)
	scrape := func(ctx context.Context) error {
		at := time.Now()
		scrapes, err := steps.Scrape(ctx, cfg.Client().RESTConfig(), kube, target, token)
		if err != nil {
			return err
		}
		for _, s := range scrapes {
			if s.Status != http.StatusOK {
				return fmt.Errorf("the Concierge's /metrics on %s answered %d", s.Pod, s.Status)
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d-%s.txt", at.UnixMilli(), s.Pod)), s.Body, 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	for i := range 2 {
		if i > 0 {
			time.Sleep(scrapeInterval)
		}
		if err := scrape(ctx); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &recording{dir: dir, cancel: cancel, done: make(chan struct{}), scrapes: 2}
	go func() {
		defer close(r.done)
		tick := time.NewTicker(scrapeInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				err := scrape(ctx)
				r.mu.Lock()
				if err == nil {
					r.scrapes++
				} else if r.err == nil && ctx.Err() == nil {
					r.err = err // kept for stop: one failed scrape is a gap, as in Prometheus
				}
				r.mu.Unlock()
			}
		}
	}()
	return r, nil
}

// stop ends the recording once four more scrapes (a rate interval) followed the last logins, so
// that their rates rise and fall back, or after eight intervals when scrapes fail, and says how
// many scrapes it made.
func (r *recording) stop(ctx context.Context) (int, error) {
	r.mu.Lock()
	target := r.scrapes + 4
	r.mu.Unlock()
	deadline := time.After(8 * scrapeInterval)
wait:
	for {
		r.mu.Lock()
		n := r.scrapes
		r.mu.Unlock()
		if n >= target {
			break
		}
		select {
		case <-ctx.Done():
			break wait
		case <-deadline:
			break wait
		case <-time.After(time.Second):
		}
	}
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.scrapes < 3 {
		return r.scrapes, errors.Join(fmt.Errorf("only %d scrapes", r.scrapes), r.err, ctx.Err())
	}
	return r.scrapes, nil
}

// drawDashboard runs the renderer (tools/dashboardrender) on the recording: the Concierge
// chart's dashboard as out, and the renderer's summary of what each exchange panel shows.
func drawDashboard(ctx context.Context, renderer string, r *recording, out string) (string, error) {
	cmd := exec.CommandContext(ctx, renderer,
		"--dashboard", steps.RepoPath("servers/concierge/deploy/chart/files/dashboard.json"),
		"--scrapes", r.dir, "--out", out)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	summary, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w: %s", renderer, err, stderr.String())
	}
	var shown []string
	for _, line := range strings.Split(string(summary), "\n") {
		if strings.HasSuffix(line, ": row") {
			continue
		}
		for _, panel := range []string{"Exchanges: ", "Refusals by reason: ", "Certificates by strategy: "} {
			if strings.HasPrefix(line, panel) {
				shown = append(shown, "    "+line)
			}
		}
	}
	return strings.Join(shown, "\n"), nil
}

// showDashboard stops the recording after the logins, draws the dashboard and says where it is
// and what its exchange panels show.
func showDashboard(ctx context.Context, renderer string, r *recording, png string) error {
	fmt.Printf("\n==> the Concierge's Grafana dashboard over these logins ... ")
	start := time.Now()
	n, err := r.stop(ctx)
	if err == nil {
		var summary string
		if summary, err = drawDashboard(ctx, renderer, r, png); err == nil {
			fmt.Printf("%s\n%d scrapes of every Concierge pod, drawn as Grafana shows the chart's dashboard: %s\n%s\n", took(start), n, png, summary)
			return nil
		}
	}
	fmt.Printf("failed after %s\n", took(start))
	return err
}
