package idtransform

import (
	"context"
	"testing"
	"time"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
)

// fuzzDeadline is the time an identity's transformation gets in the fuzz target, and
// fuzzOverrun how much longer than that it may take to give up: the cost limit stops it, and a
// run up to the limit takes seconds under the race detector on a busy machine. The nested
// comprehensions in testdata/fuzz/FuzzExpression ran 5 s past the deadline before the limit;
// TestEvaluationStopsAtCostLimit holds that case exactly.
const (
	fuzzDeadline = 200 * time.Millisecond
	fuzzOverrun  = 10 * time.Second
)

// FuzzExpression compiles arbitrary expressions of each kind and runs those that compile on an
// arbitrary identity. Compiling either fails with an error or yields a pipeline; running it
// either fails, rejects with a message, or returns an identity of the right shape (a non-empty
// username, the groups as a list), and gives up soon after its deadline, whatever the expression
// costs: never a panic, never a hang.
func FuzzExpression(f *testing.F) {
	kinds := []configv1alpha1.TransformsExpressionType{username, groups, policy}
	for _, seed := range []struct {
		kind       uint8
		expression string
		username   string
	}{
		{0, `strConst.prefix + username.upperAscii()`, "pinny"},
		{0, `username.replace("a", username)`, "aaaa"},
		{0, `username.substring(5)`, "abc"},
		{0, `""`, "pinny"},
		{0, `username.split("@")[1]`, "pinny"},
		{1, `groups.map(g, "team-" + g)`, "pinny"},
		{1, `groups.filter(g, g.startsWith("a")) + strListConst.admins`, "pinny"},
		{1, `[username].map(u, u + u)`, "x"},
		{2, `username in strListConst.admins`, "alice"},
		{2, `[0,1,2,3,4,5,6,7,8,9].map(a, [0,1,2,3,4,5,6,7,8,9].map(b, [0,1,2,3,4,5,6,7,8,9].map(c, [0,1,2,3,4,5,6,7,8,9].map(d, a+b+c+d)))).size() > 0`, "x"},
		{2, `1 / 0 == 1`, "x"},
		{2, `username.matches("(a+)+$")`, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"},
		{2, `strConst.missing == ""`, "x"},
		{0, `username +`, "x"},
		{2, `"\xff"`, "\xff"},
	} {
		f.Add(seed.kind, seed.expression, seed.username)
	}
	f.Fuzz(func(t *testing.T, which uint8, expression, name string) {
		kind := kinds[int(which)%len(kinds)]
		p, err := Compile(configv1alpha1.FederationDomainTransforms{
			Constants:   constants,
			Expressions: []configv1alpha1.FederationDomainTransformsExpression{{Type: kind, Expression: expression, Message: "no"}},
		})
		if err != nil {
			if p != nil {
				t.Fatalf("Compile(%q) returned a pipeline with error %v", expression, err)
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), fuzzDeadline)
		defer cancel()
		start := time.Now()
		res, err := p.Evaluate(ctx, Identity{Username: name, Groups: []string{name, "seals"}})
		if took := time.Since(start); took > fuzzDeadline+fuzzOverrun {
			t.Fatalf("%s expression %q took %s, well past its deadline", kind, expression, took)
		}
		switch {
		case err != nil:
			if res.Rejected || res.Username != "" || res.Groups != nil {
				t.Fatalf("an error came with a result: %+v, %v", res, err)
			}
		case res.Rejected:
			if kind != policy || res.Message != "no" || res.Username != "" {
				t.Fatalf("%s expression %q rejected with %+v", kind, expression, res)
			}
		case res.Username == "" || res.Groups == nil:
			t.Fatalf("%s expression %q returned %+v", kind, expression, res)
		}
	})
}
