package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"sealion.dev/matrix"
)

// JUnit XML, as CI systems read it: a testsuite per distribution and version, a testcase for
// its strategy and one per identity path, each timed by its tests (re-runs included) and each
// suite by the group's wall time. Paths that did not run are skipped with the reason, errors
// (nothing could be tested) are errors, failures failures; a flaky case passes with a
// flakyFailure element holding its first failure, as Maven Surefire writes (Jenkins and GitLab
// read it).
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     float64      `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       float64         `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Flaky     *junitMessage `xml:"flakyFailure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// JUnit writes the results as JUnit XML.
func JUnit(w io.Writer, r matrix.Results) error {
	out := junitSuites{Name: "conformance matrix", Time: r.Duration.Seconds()}
	for _, g := range r.Groups {
		s := junitSuite{Name: g.Name(), Time: g.Duration.Seconds()}
		if !g.Started.IsZero() {
			s.Timestamp = g.Started.UTC().Format(time.RFC3339)
		}
		if g.Version.Release != "" {
			s.Properties = append(s.Properties, junitProperty{"kubernetes", g.Version.Release})
		}
		s.Properties = append(s.Properties, junitProperty{"distribution", g.Label()})
		if g.TestTime > 0 {
			s.Properties = append(s.Properties, junitProperty{"tests.time", fmt.Sprint(g.TestTime.Seconds())})
		}
		class := strings.ReplaceAll(g.Name(), "/", ".")
		if st := g.Strategy; st != nil {
			s.Properties = append(s.Properties, junitProperty{"strategy.expected", st.Expected},
				junitProperty{"strategy.chosen", strings.Join(st.Chosen, ",")})
			if st.Mismatch() {
				s.Properties = append(s.Properties, junitProperty{"strategy.mismatch", "true"})
			}
			c := junitCaseOf(class, "strategy "+strategyName(*st), st.Outcome, st.Tests, "")
			c.SystemOut = "strategy " + strategyLine(*st) + "\n" + c.SystemOut
			s.Cases = append(s.Cases, c)
		}
		for _, p := range g.Paths {
			o := p.Outcome
			if g.Strategy == nil && o.Status == g.Status && o.Reason == "" {
				o.Reason = g.Reason
			}
			s.Cases = append(s.Cases, junitCaseOf(class, p.Name, o, p.Tests, p.Change))
		}
		for _, c := range s.Cases {
			s.Tests++
			switch {
			case c.Failure != nil:
				s.Failures++
			case c.Error != nil:
				s.Errors++
			case c.Skipped != nil:
				s.Skipped++
			}
		}
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Errors += s.Errors
		out.Skipped += s.Skipped
		out.Suites = append(out.Suites, s)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func strategyName(s matrix.StrategyResult) string {
	if s.Expected != "" {
		return s.Expected
	}
	return "(not asserted)"
}

func junitCaseOf(class, name string, o matrix.Outcome, tests []matrix.TestOutcome, change matrix.Change) junitCase {
	c := junitCase{Name: name, Classname: class}
	var out strings.Builder
	if change != "" {
		fmt.Fprintf(&out, "since the baseline: %s\n", change)
	}
	for _, t := range tests {
		c.Time += t.Elapsed.Seconds()
		fmt.Fprintf(&out, "%s: %s (%s)", t.Name, t.Status, duration(t.Elapsed))
		if t.Log != "" {
			fmt.Fprintf(&out, ", log %s", t.Log)
		}
		if r := t.Retry; r != nil {
			c.Time += r.Elapsed.Seconds()
			fmt.Fprintf(&out, "; run again: %s (%s)", r.Status, duration(r.Elapsed))
			if r.Log != "" {
				fmt.Fprintf(&out, ", log %s", r.Log)
			}
		}
		out.WriteString("\n")
	}
	c.SystemOut = out.String()
	msg := &junitMessage{Message: firstLine(string(o.Status) + ": " + o.Reason), Text: o.Reason}
	if change == matrix.Regression {
		msg.Message = "regression: " + msg.Message
	}
	switch o.Status {
	case matrix.Fail:
		c.Failure = msg
	case matrix.Error:
		c.Error = msg
	case matrix.Flaky:
		c.Flaky = msg
	case matrix.Pass:
	default: // skip, not built yet, cannot run here, not run
		c.Skipped = msg
	}
	return c
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSuffix(s, ": "), "\n")
	return l
}
