// Package idtransform compiles and runs the identity transformations of one identity provider of
// a FederationDomain: CEL expressions that, in order, rewrite the username (username/v1), rewrite
// the groups (groups/v1) or reject the identity (policy/v1), reading the constants declared next to
// them. The examples written with them are self-tests, checked by CheckExamples.
//
// Expressions see the variables username (string), groups (list of strings), strConst (map of the
// string constants) and strListConst (map of the stringList constants), with CEL's base language
// and its strings extension. Type errors are compile errors, so a FederationDomain with a bad
// expression is refused up front instead of failing logins.
package idtransform

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	"k8s.io/apiserver/pkg/cel/library"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
)

// DefaultRejectionMessage is what a user rejected by a policy without a message of its own is told.
// Upstream Pinniped's text, which examples expecting a rejection without a message must match.
const DefaultRejectionMessage = "Authentication was rejected by a configured policy"

// EvaluationTimeout caps the run time of each expression, so that a costly one cannot hold a
// login (or a controller checking examples) for long.
const EvaluationTimeout = 5 * time.Second

// CostLimit caps the work of each run of an expression, in CEL's cost units as Kubernetes counts
// them (strings functions by the size of what they traverse). The timeout alone does not bound
// it: CEL checks for a timeout only every 100 steps of one comprehension, so nested small
// comprehensions (ten elements each, six deep) ran for seconds after their deadline. Kubernetes
// allows a validation rule the same.
const CostLimit = 1_000_000

// Variable names, as expressions use them.
const (
	varUsername     = "username"
	varGroups       = "groups"
	varStrConst     = "strConst"
	varStrListConst = "strListConst"
)

// Identity is a username and its groups.
type Identity struct {
	Username string
	Groups   []string
}

// Result is the outcome of running the transformations on an identity.
type Result struct {
	// Identity is the transformed identity; empty when Rejected.
	Identity
	// Rejected says a policy refused the identity, and Message what to tell the user.
	Rejected bool
	Message  string
}

// Pipeline is a compiled list of expressions with their constants. It is safe for concurrent use.
// The zero value (and nil) passes identities through unchanged.
type Pipeline struct {
	steps        []step
	strConst     map[string]string
	strListConst map[string][]string
}

type step struct {
	kind    configv1alpha1.TransformsExpressionType
	program cel.Program
	message string // policy/v1 only
}

// resultTypes is the type each kind of expression must evaluate to.
var resultTypes = map[configv1alpha1.TransformsExpressionType]*cel.Type{
	configv1alpha1.TransformsExpressionTypeUsername: cel.StringType,
	configv1alpha1.TransformsExpressionTypeGroups:   cel.ListType(cel.StringType),
	configv1alpha1.TransformsExpressionTypePolicy:   cel.BoolType,
}

func newEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable(varUsername, cel.StringType),
		cel.Variable(varGroups, cel.ListType(cel.StringType)),
		cel.Variable(varStrConst, cel.MapType(cel.StringType, cel.StringType)),
		cel.Variable(varStrListConst, cel.MapType(cel.StringType, cel.ListType(cel.StringType))),
		ext.Strings(),
		cel.HomogeneousAggregateLiterals(),
		cel.DefaultUTCTimeZone(true),
	)
}

// FieldError is one invalid constant or expression of the transforms.
type FieldError struct {
	// Field is "constants" or "expressions", and Index the position in it.
	Field string
	Index int
	Err   error
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s[%d]: %v", e.Field, e.Index, e.Err) }

func (e *FieldError) Unwrap() error { return e.Err }

// Compile checks and compiles transforms. The error joins one *FieldError per invalid constant
// and expression.
func Compile(transforms configv1alpha1.FederationDomainTransforms) (*Pipeline, error) {
	env, err := newEnv()
	if err != nil {
		return nil, fmt.Errorf("creating the CEL environment: %w", err)
	}
	p := &Pipeline{strConst: map[string]string{}, strListConst: map[string][]string{}}
	var errs []error
	for i, c := range transforms.Constants {
		_, dupString := p.strConst[c.Name]
		_, dupList := p.strListConst[c.Name]
		switch {
		case dupString || dupList:
			errs = append(errs, &FieldError{Field: "constants", Index: i, Err: fmt.Errorf("duplicate constant name %q", c.Name)})
		case c.Type == configv1alpha1.TransformsConstantTypeString:
			p.strConst[c.Name] = c.StringValue
		case c.Type == configv1alpha1.TransformsConstantTypeStringList:
			p.strListConst[c.Name] = slices.Clone(c.StringListValue)
		default:
			errs = append(errs, &FieldError{Field: "constants", Index: i, Err: fmt.Errorf("unknown type %q", c.Type)})
		}
	}
	for i, e := range transforms.Expressions {
		s, err := compileStep(env, e)
		if err != nil {
			errs = append(errs, &FieldError{Field: "expressions", Index: i, Err: err})
			continue
		}
		p.steps = append(p.steps, s)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// compileStep compiles one expression. Its errors are upstream Pinniped's texts, which the
// FederationDomain's TransformsExpressionsValid condition shows.
func compileStep(env *cel.Env, e configv1alpha1.FederationDomainTransformsExpression) (step, error) {
	want, ok := resultTypes[e.Type]
	if !ok {
		return step{}, fmt.Errorf("unknown type %q", e.Type)
	}
	if strings.TrimSpace(e.Expression) == "" {
		return step{}, errors.New("cannot compile empty CEL expression")
	}
	ast, issues := env.Compile(e.Expression)
	if issues.Err() != nil {
		return step{}, fmt.Errorf("CEL expression compile error: %s", issues)
	}
	if got := ast.OutputType(); !got.IsExactType(want) {
		return step{}, fmt.Errorf("CEL expression should return type %q but returns type %q", want, got)
	}
	program, err := env.Program(ast, cel.InterruptCheckFrequency(100),
		cel.CostTracking(&library.CostEstimator{}), cel.CostLimit(CostLimit))
	if err != nil {
		return step{}, fmt.Errorf("CEL expression program construction error: %w", err)
	}
	return step{kind: e.Type, program: program, message: e.Message}, nil
}

// Evaluate runs every expression in order on in. A policy returning false stops the run with a
// rejection; an expression failing at run time, or a username that ends up empty or blank, is an
// error (in upstream Pinniped's words, which failing examples show).
func (p *Pipeline) Evaluate(ctx context.Context, in Identity) (Result, error) {
	current := Identity{Username: in.Username, Groups: slices.Clone(in.Groups)}
	if current.Groups == nil {
		current.Groups = []string{}
	}
	// No identity leaves without a username: a username expression cannot empty it (below), and
	// an empty one cannot come in, or a policy that lets it through would hand it on.
	if current.Username == "" {
		return Result{}, errors.New("the identity to transform has an empty username")
	}
	if p == nil {
		return Result{Identity: current}, nil
	}
	for i, s := range p.steps {
		out, err := p.run(ctx, s, current)
		if err != nil {
			return Result{}, fmt.Errorf("identity transformation at index %d: %w", i, err)
		}
		switch s.kind {
		case configv1alpha1.TransformsExpressionTypeUsername:
			current.Username = out.(string)
			if strings.TrimSpace(current.Username) == "" {
				return Result{}, errors.New("identity transformation returned an empty username, which is not allowed")
			}
		case configv1alpha1.TransformsExpressionTypeGroups:
			current.Groups = out.([]string)
		case configv1alpha1.TransformsExpressionTypePolicy:
			if !out.(bool) {
				message := s.message
				if message == "" {
					message = DefaultRejectionMessage
				}
				return Result{Rejected: true, Message: message}, nil
			}
		}
	}
	return Result{Identity: current}, nil
}

var stringSliceType = reflect.TypeOf([]string{})

// run evaluates one step, converting the result to the Go type of its kind.
func (p *Pipeline) run(ctx context.Context, s step, in Identity) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, EvaluationTimeout)
	defer cancel()
	val, _, err := s.program.ContextEval(ctx, map[string]any{
		varUsername:     in.Username,
		varGroups:       in.Groups,
		varStrConst:     p.strConst,
		varStrListConst: p.strListConst,
	})
	if err != nil {
		return nil, err
	}
	switch s.kind {
	case configv1alpha1.TransformsExpressionTypeGroups:
		out, err := val.ConvertToNative(stringSliceType)
		if err != nil {
			return nil, fmt.Errorf("converting the groups: %w", err)
		}
		return out, nil
	default:
		return val.Value(), nil
	}
}
