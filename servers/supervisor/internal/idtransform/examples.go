package idtransform

import (
	"context"
	"errors"
	"fmt"
	"slices"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
)

// CheckExamples runs every example through p and returns one error per example whose result
// differs from what it expects, each named by its path below transforms ("examples[2]").
//
// An example expecting a rejection with no message expects DefaultRejectionMessage. Groups are
// compared as sets: their order and repeats do not matter.
func (p *Pipeline) CheckExamples(ctx context.Context, examples []configv1alpha1.FederationDomainTransformsExample) error {
	var errs []error
	for i, ex := range examples {
		if err := p.checkExample(ctx, ex); err != nil {
			errs = append(errs, fmt.Errorf("examples[%d]: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

func (p *Pipeline) checkExample(ctx context.Context, ex configv1alpha1.FederationDomainTransformsExample) error {
	got, err := p.Evaluate(ctx, Identity{Username: ex.Username, Groups: ex.Groups})
	if err != nil {
		return fmt.Errorf("the transforms failed on username %q: %w", ex.Username, err)
	}
	want := ex.Expects
	switch {
	case want.Rejected && !got.Rejected:
		return fmt.Errorf("expected username %q to be rejected, but it was accepted as username %q with groups %q",
			ex.Username, got.Username, got.Groups)
	case want.Rejected:
		wantMessage := want.Message
		if wantMessage == "" {
			wantMessage = DefaultRejectionMessage
		}
		if got.Message != wantMessage {
			return fmt.Errorf("expected the rejection message %q, got %q", wantMessage, got.Message)
		}
	case got.Rejected:
		return fmt.Errorf("expected username %q to be accepted, but a policy rejected it: %s", ex.Username, got.Message)
	default:
		var problems []error
		if got.Username != want.Username {
			problems = append(problems, fmt.Errorf("expected username %q, got %q", want.Username, got.Username))
		}
		if !sameSet(got.Groups, want.Groups) {
			problems = append(problems, fmt.Errorf("expected groups %q, got %q", sorted(want.Groups), sorted(got.Groups)))
		}
		return errors.Join(problems...)
	}
	return nil
}

func sameSet(a, b []string) bool {
	return slices.Equal(sorted(a), sorted(b))
}

// sorted returns a sorted copy of s without repeats, never nil.
func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	out = slices.Compact(out)
	if out == nil {
		out = []string{}
	}
	return out
}
