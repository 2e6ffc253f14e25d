package idtransform

import (
	"context"
	"fmt"
	"slices"
	"strings"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
)

// ExampleFailure is one way in which an example's result differs from what it expects, in upstream
// Pinniped's words (the FederationDomain's TransformsExamplesPassed condition shows them).
type ExampleFailure struct {
	// Index is the example's position in the examples.
	Index            int
	Expected, Actual string
}

// CheckExamples runs every example through p and returns how the results differ from what the
// examples expect, in the order of the examples. An example whose username and groups both differ
// fails twice.
//
// An example expecting a rejection with no message expects DefaultRejectionMessage. Groups are
// compared as sets: their order and repeats do not matter.
func (p *Pipeline) CheckExamples(ctx context.Context, examples []configv1alpha1.FederationDomainTransformsExample) []ExampleFailure {
	var failures []ExampleFailure
	for i, ex := range examples {
		fail := func(expected, actual string) {
			failures = append(failures, ExampleFailure{Index: i, Expected: expected, Actual: actual})
		}
		got, err := p.Evaluate(ctx, Identity{Username: ex.Username, Groups: ex.Groups})
		want := ex.Expects
		wantMessage := want.Message
		if wantMessage == "" {
			wantMessage = DefaultRejectionMessage
		}
		switch {
		case err != nil:
			fail("no transformation errors", fmt.Sprintf("transformations resulted in an unexpected error %q", err.Error()))
		case want.Rejected && !got.Rejected:
			fail("authentication to be rejected", "authentication was not rejected")
		case !want.Rejected && got.Rejected:
			fail("authentication not to be rejected", fmt.Sprintf("authentication was rejected with message %q", got.Message))
		case want.Rejected && got.Message != wantMessage:
			fail(fmt.Sprintf("authentication rejection message %q", wantMessage), fmt.Sprintf("authentication rejection message %q", got.Message))
		case !want.Rejected:
			if got.Username != want.Username {
				fail(fmt.Sprintf("username %q", want.Username), fmt.Sprintf("username %q", got.Username))
			}
			if !sameSet(got.Groups, want.Groups) {
				fail("groups ["+sortedQuoted(want.Groups)+"]", "groups ["+sortedQuoted(got.Groups)+"]")
			}
		}
	}
	return failures
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Compact(slices.Sorted(slices.Values(a))), slices.Compact(slices.Sorted(slices.Values(b))))
}

// sortedQuoted lists s quoted, sorted, repeats included, separated by commas.
func sortedQuoted(s []string) string {
	quoted := make([]string, 0, len(s))
	for _, v := range s {
		quoted = append(quoted, fmt.Sprintf("%q", v))
	}
	slices.Sort(quoted)
	return strings.Join(quoted, ", ")
}
