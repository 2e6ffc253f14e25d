package idtransform

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
)

func expr(kind configv1alpha1.TransformsExpressionType, expression string) configv1alpha1.FederationDomainTransformsExpression {
	return configv1alpha1.FederationDomainTransformsExpression{Type: kind, Expression: expression}
}

const (
	username = configv1alpha1.TransformsExpressionTypeUsername
	groups   = configv1alpha1.TransformsExpressionTypeGroups
	policy   = configv1alpha1.TransformsExpressionTypePolicy
)

var constants = []configv1alpha1.FederationDomainTransformsConstant{
	{Name: "prefix", Type: configv1alpha1.TransformsConstantTypeString, StringValue: "corp:"},
	{Name: "admins", Type: configv1alpha1.TransformsConstantTypeStringList, StringListValue: []string{"alice", "bob"}},
}

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name        string
		expressions []configv1alpha1.FederationDomainTransformsExpression
		in          Identity
		want        Result
		wantErr     string
	}{
		{
			name: "no expressions pass the identity through",
			in:   Identity{Username: "pinny", Groups: []string{"seals"}},
			want: Result{Identity: Identity{Username: "pinny", Groups: []string{"seals"}}},
		},
		{
			name:        "username from a string constant and a strings extension function",
			expressions: []configv1alpha1.FederationDomainTransformsExpression{expr(username, `strConst.prefix + username.upperAscii()`)},
			in:          Identity{Username: "pinny"},
			want:        Result{Identity: Identity{Username: "corp:PINNY", Groups: []string{}}},
		},
		{
			name: "expressions run in order and see earlier results",
			expressions: []configv1alpha1.FederationDomainTransformsExpression{
				expr(groups, `groups.map(g, "team-" + g)`),
				expr(username, `username + "@" + groups[0]`),
			},
			in:   Identity{Username: "pinny", Groups: []string{"seals", "walruses"}},
			want: Result{Identity: Identity{Username: "pinny@team-seals", Groups: []string{"team-seals", "team-walruses"}}},
		},
		{
			name: "policy allowing the identity",
			expressions: []configv1alpha1.FederationDomainTransformsExpression{
				expr(policy, `username in strListConst.admins`),
			},
			in:   Identity{Username: "alice"},
			want: Result{Identity: Identity{Username: "alice", Groups: []string{}}},
		},
		{
			name: "policy rejecting with its message stops the run",
			expressions: []configv1alpha1.FederationDomainTransformsExpression{
				{Type: policy, Expression: `username in strListConst.admins`, Message: "admins only"},
				expr(username, `"never"`),
			},
			in:   Identity{Username: "mallory"},
			want: Result{Rejected: true, Message: "admins only"},
		},
		{
			name:        "policy rejecting without a message",
			expressions: []configv1alpha1.FederationDomainTransformsExpression{expr(policy, `false`)},
			in:          Identity{Username: "pinny"},
			want:        Result{Rejected: true, Message: DefaultRejectionMessage},
		},
		{
			name:        "run-time error",
			expressions: []configv1alpha1.FederationDomainTransformsExpression{expr(username, `groups[3]`)},
			in:          Identity{Username: "pinny", Groups: []string{"seals"}},
			wantErr:     "identity transformation at index 0: ",
		},
		{
			name:        "empty username",
			expressions: []configv1alpha1.FederationDomainTransformsExpression{expr(username, `""`)},
			in:          Identity{Username: "pinny"},
			wantErr:     "identity transformation returned an empty username, which is not allowed",
		},
		{
			name:        "blank username",
			expressions: []configv1alpha1.FederationDomainTransformsExpression{expr(username, `" "`)},
			in:          Identity{Username: "pinny"},
			wantErr:     "identity transformation returned an empty username, which is not allowed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compile(configv1alpha1.FederationDomainTransforms{Constants: constants, Expressions: tt.expressions})
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			got, err := p.Evaluate(context.Background(), tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNilPipelinePassesThrough(t *testing.T) {
	var p *Pipeline
	got, err := p.Evaluate(context.Background(), Identity{Username: "pinny", Groups: []string{"a"}})
	if err != nil || got.Username != "pinny" || !cmp.Equal(got.Groups, []string{"a"}) {
		t.Errorf("got %+v, %v", got, err)
	}
}

func TestCompileErrors(t *testing.T) {
	exprs := func(e ...configv1alpha1.FederationDomainTransformsExpression) configv1alpha1.FederationDomainTransforms {
		return configv1alpha1.FederationDomainTransforms{Expressions: e}
	}
	tests := []struct {
		name       string
		transforms configv1alpha1.FederationDomainTransforms
		want       []string // each FieldError, in order
	}{
		{
			name:       "syntax error",
			transforms: exprs(expr(username, `username +`)),
			want: []string{"expressions[0]: CEL expression compile error: ERROR: <input>:1:11: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n" +
				" | username +\n" +
				" | ..........^"},
		},
		{
			name:       "wrong result type",
			transforms: exprs(expr(policy, `username`)),
			want:       []string{`expressions[0]: CEL expression should return type "bool" but returns type "string"`},
		},
		{
			name:       "groups must be a list of strings",
			transforms: exprs(expr(groups, `[1, 2]`)),
			want:       []string{`expressions[0]: CEL expression should return type "list(string)" but returns type "list(int)"`},
		},
		{
			name:       "unknown variable",
			transforms: exprs(expr(username, `email`)),
			want: []string{"expressions[0]: CEL expression compile error: ERROR: <input>:1:1: undeclared reference to 'email' (in container '')\n" +
				" | email\n" +
				" | ^"},
		},
		{
			name:       "empty expression",
			transforms: exprs(expr(username, ` `)),
			want:       []string{"expressions[0]: cannot compile empty CEL expression"},
		},
		{
			name:       "unknown expression type",
			transforms: exprs(expr("email/v1", `username`)),
			want:       []string{`expressions[0]: unknown type "email/v1"`},
		},
		{
			name: "every error is reported",
			transforms: configv1alpha1.FederationDomainTransforms{
				Constants: []configv1alpha1.FederationDomainTransformsConstant{
					{Name: "a", Type: configv1alpha1.TransformsConstantTypeString},
					{Name: "a", Type: configv1alpha1.TransformsConstantTypeStringList},
					{Name: "b", Type: "number"},
				},
				Expressions: []configv1alpha1.FederationDomainTransformsExpression{
					expr(username, `username`), expr(username, `1`), expr(policy, `""`),
				},
			},
			want: []string{
				`constants[1]: duplicate constant name "a"`, `constants[2]: unknown type "number"`,
				`expressions[1]: CEL expression should return type "string" but returns type "int"`,
				`expressions[2]: CEL expression should return type "bool" but returns type "string"`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile(tt.transforms)
			joined, ok := err.(interface{ Unwrap() []error })
			if !ok {
				t.Fatalf("Compile returned %v, not a joined error", err)
			}
			var got []string
			for _, e := range joined.Unwrap() {
				var fe *FieldError
				if !errors.As(e, &fe) {
					t.Errorf("%v is not a *FieldError", e)
				}
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEvaluationTimesOut(t *testing.T) {
	p, err := Compile(configv1alpha1.FederationDomainTransforms{Expressions: []configv1alpha1.FederationDomainTransformsExpression{
		// Quadratic in a list of 10^4 elements: far longer than the caller's deadline.
		expr(policy, `[0,1,2,3,4,5,6,7,8,9].map(a, [0,1,2,3,4,5,6,7,8,9].map(b, [0,1,2,3,4,5,6,7,8,9].map(c, [0,1,2,3,4,5,6,7,8,9].map(d, [0,1,2,3,4,5,6,7,8,9].map(e, [0,1,2,3,4,5,6,7,8,9].map(f, a+b+c+d+e+f)))))).size() > 0`),
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Evaluate(ctx, Identity{Username: "pinny"}); err == nil {
		t.Fatal("an expression ran to completion after its context ended")
	}
}

func TestCheckExamples(t *testing.T) {
	p, err := Compile(configv1alpha1.FederationDomainTransforms{
		Constants: constants,
		Expressions: []configv1alpha1.FederationDomainTransformsExpression{
			{Type: policy, Expression: `!(username in ["mallory", "eve"])`, Message: "not you"},
			expr(policy, `username != "trudy"`),
			expr(username, `strConst.prefix + username`),
			expr(groups, `groups + ["everyone"]`),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	example := func(user string, expects configv1alpha1.FederationDomainTransformsExampleExpects, groups ...string) configv1alpha1.FederationDomainTransformsExample {
		return configv1alpha1.FederationDomainTransformsExample{Username: user, Groups: groups, Expects: expects}
	}
	tests := []struct {
		name    string
		example configv1alpha1.FederationDomainTransformsExample
		want    []ExampleFailure
	}{
		{name: "accepted and transformed, groups in any order with repeats",
			example: example("pinny", configv1alpha1.FederationDomainTransformsExampleExpects{Username: "corp:pinny", Groups: []string{"everyone", "seals", "seals"}}, "seals")},
		{name: "rejected with the policy's message",
			example: example("mallory", configv1alpha1.FederationDomainTransformsExampleExpects{Rejected: true, Message: "not you"})},
		{name: "rejected with the default message",
			example: example("trudy", configv1alpha1.FederationDomainTransformsExampleExpects{Rejected: true})},
		{name: "wrong username and groups fail separately",
			example: example("pinny", configv1alpha1.FederationDomainTransformsExampleExpects{Username: "pinny", Groups: []string{"b", "a", "a"}}, "x"),
			want: []ExampleFailure{
				{Expected: `username "pinny"`, Actual: `username "corp:pinny"`},
				{Expected: `groups ["a", "a", "b"]`, Actual: `groups ["everyone", "x"]`},
			}},
		{name: "no groups expected",
			example: example("pinny", configv1alpha1.FederationDomainTransformsExampleExpects{Username: "corp:pinny"}),
			want:    []ExampleFailure{{Expected: `groups []`, Actual: `groups ["everyone"]`}}},
		{name: "expected a rejection",
			example: example("pinny", configv1alpha1.FederationDomainTransformsExampleExpects{Rejected: true}),
			want:    []ExampleFailure{{Expected: "authentication to be rejected", Actual: "authentication was not rejected"}}},
		{name: "unexpected rejection",
			example: example("eve", configv1alpha1.FederationDomainTransformsExampleExpects{Username: "corp:eve"}),
			want:    []ExampleFailure{{Expected: "authentication not to be rejected", Actual: `authentication was rejected with message "not you"`}}},
		{name: "wrong message",
			example: example("eve", configv1alpha1.FederationDomainTransformsExampleExpects{Rejected: true}),
			want:    []ExampleFailure{{Expected: `authentication rejection message "Authentication was rejected by a configured policy"`, Actual: `authentication rejection message "not you"`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := p.CheckExamples(context.Background(), []configv1alpha1.FederationDomainTransformsExample{tt.example})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("failures (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEvaluationStopsAtCostLimit(t *testing.T) {
	// 10^6 steps in comprehensions of ten elements each: the cost limit stops it, whatever the
	// time allowed, and a deadline stops it too.
	digits := "[0,1,2,3,4,5,6,7,8,9]"
	p, err := Compile(configv1alpha1.FederationDomainTransforms{Expressions: []configv1alpha1.FederationDomainTransformsExpression{
		expr(policy, digits+`.map(a, `+digits+`.map(b, `+digits+`.map(c, `+digits+`.map(d, `+digits+`.map(e, `+digits+`.map(f, a+b+c+d+e+f)))))).size() > 0`),
	}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := p.Evaluate(context.Background(), Identity{Username: "pinny"}); err == nil || !strings.Contains(err.Error(), "cost limit exceeded") {
		t.Fatalf("Evaluate = %v; want the cost limit exceeded", err)
	}
	t.Logf("stopped by the cost limit after %v", time.Since(start))
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if _, err := p.Evaluate(ctx, Identity{Username: "pinny"}); err == nil {
		t.Fatal("Evaluate with a deadline of 1ms succeeded")
	}
}

func TestCheckExamplesRunTimeError(t *testing.T) {
	p, err := Compile(configv1alpha1.FederationDomainTransforms{Expressions: []configv1alpha1.FederationDomainTransformsExpression{
		expr(policy, `true`), expr(username, `groups[3]`),
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := p.CheckExamples(context.Background(), []configv1alpha1.FederationDomainTransformsExample{
		{Username: "ok", Expects: configv1alpha1.FederationDomainTransformsExampleExpects{Rejected: true}},
		{Username: "pinny", Groups: []string{"a"}, Expects: configv1alpha1.FederationDomainTransformsExampleExpects{Username: "a"}},
	})
	want := []ExampleFailure{
		{Index: 0, Expected: "no transformation errors", Actual: `transformations resulted in an unexpected error "identity transformation at index 1: index out of bounds: 3"`},
		{Index: 1, Expected: "no transformation errors", Actual: `transformations resulted in an unexpected error "identity transformation at index 1: index out of bounds: 3"`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
}
