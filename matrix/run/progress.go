package run

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"sealion.dev/matrix"
	"sealion.dev/matrix/report"
	"sealion.dev/matrix/testjson"
)

// statusEvery is how often the status line repeats while a group runs.
const statusEvery = 30 * time.Second

// progress prints what the run does, one line per event, and a status line (cells done, running
// and left, elapsed time, time left in the budget) at every group boundary and every half minute.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	now     func() time.Time
	started time.Time
	budget  time.Duration
	// color colours verdicts with ANSI escapes.
	color bool

	// Cells are counted by identity path; those that will not run count as done from the start.
	total, done int
	running     []matrix.Cell
	runningName string
	test        string
	// testsRun counts the running group's finished tests: none yet means its suite is setting up.
	testsRun int

	stopTicker chan struct{}
	tickerDone chan struct{}
}

func newProgress(w io.Writer, color bool, now func() time.Time, started time.Time, budget time.Duration, groups []matrix.Group) *progress {
	p := &progress{w: w, color: color, now: now, started: started, budget: budget}
	for _, g := range groups {
		p.total += len(g.Paths)
	}
	if w == nil {
		p.w = io.Discard
	}
	p.stopTicker, p.tickerDone = make(chan struct{}), make(chan struct{})
	go p.tick()
	p.printf("%d cells in %d groups (one cluster each)", p.total, len(groups))
	return p
}

func (p *progress) tick() {
	defer close(p.tickerDone)
	t := time.NewTicker(statusEvery)
	defer t.Stop()
	for {
		select {
		case <-p.stopTicker:
			return
		case <-t.C:
			p.mu.Lock()
			if p.runningName != "" {
				p.writeLocked(p.statusLocked())
			}
			p.mu.Unlock()
		}
	}
}

func (p *progress) close() {
	close(p.stopTicker)
	<-p.tickerDone
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writeLocked(p.statusLocked())
}

func (p *progress) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writeLocked(fmt.Sprintf(format, args...))
}

func (p *progress) writeLocked(line string) {
	fmt.Fprintf(p.w, "matrix %s | %s\n", clock(p.now().Sub(p.started)), line)
}

func (p *progress) start(g matrix.Group) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running, p.runningName, p.test, p.testsRun = g.Cells(), g.Name(), "", 0
	kube := g.Version.Release
	if kube == "" {
		kube = "the cluster's own version"
	}
	p.writeLocked(fmt.Sprintf("%s: starting (Kubernetes %s, logs in %s)", g.Name(), kube, GroupDir(g)))
	p.writeLocked(p.statusLocked())
}

// suiteLine passes on the suite's own milestones ("e2e: kubeadm cluster ... ready in 1m2s").
func (p *progress) suiteLine(g matrix.Group, line string) {
	if s := strings.TrimSpace(line); strings.HasPrefix(s, "e2e: ") {
		p.printf("%s: %s", g.Name(), strings.TrimPrefix(s, "e2e: "))
	}
}

// testEvent reports a top-level test starting or ending. An ended test is named by what it
// proved (t's Outcome, as the report counts it): a test whose every subtest skipped passed for go
// test, but is a skip here.
func (p *progress) testEvent(g matrix.Group, e testjson.Event, t *testjson.Test) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e.Action {
	case "run":
		p.test = e.Test
	case "pass", "fail", "skip":
		p.test = ""
		p.testsRun++
		result := testjson.Result(e.Action)
		if t != nil {
			result, _ = t.Outcome()
		}
		p.writeLocked(fmt.Sprintf("%s: %s %s (%s)", g.Name(), e.Test, result,
			time.Duration(e.Elapsed*float64(time.Second)).Round(100*time.Millisecond)))
	}
}

func (p *progress) finish(g matrix.Group, r matrix.GroupResult) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += len(g.Paths)
	wasRunning := p.runningName == g.Name()
	p.running, p.runningName, p.test = nil, "", ""
	line := fmt.Sprintf("%s: %s", g.Name(), p.verdict(r.Status))
	for _, path := range r.Paths {
		line += fmt.Sprintf(", %s %s", path.Name, p.verdict(path.Status))
	}
	if st := r.Strategy; st != nil {
		line += ", strategy " + p.verdict(st.Status)
		if st.Mismatch() {
			line += fmt.Sprintf(" (expected %s, seen %s)", st.Expected, strings.Join(st.Chosen, " + "))
		}
	}
	if !wasRunning && r.Reason != "" {
		line += ": " + firstLine(r.Reason)
	}
	if wasRunning {
		line += fmt.Sprintf(" in %s", r.Duration.Round(time.Second))
	}
	p.writeLocked(line)
}

// verdict is a status as a word, coloured when the output is a terminal that wants colour.
func (p *progress) verdict(s matrix.Status) string {
	if p.color {
		return report.ANSI(string(s))
	}
	return string(s)
}

func (p *progress) statusLocked() string {
	s := fmt.Sprintf("cells: %d done, %d running, %d left", p.done, len(p.running), p.total-p.done-len(p.running))
	if p.runningName != "" {
		s += " (" + p.runningName
		switch {
		case p.test != "":
			s += ": " + p.test
		case p.testsRun == 0:
			s += ": building and setting up"
		}
		s += ")"
	}
	elapsed := p.now().Sub(p.started)
	s += " | elapsed " + clock(elapsed)
	if p.budget > 0 {
		left := p.budget - elapsed
		if left < 0 {
			left = 0
		}
		s += ", budget left " + clock(left)
	}
	return s
}

func clock(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}
