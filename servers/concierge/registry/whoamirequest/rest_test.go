package whoamirequest

import (
	"context"
	"reflect"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"sealion.dev/core/apis/concierge/identity"
)

func TestCreate(t *testing.T) {
	r := NewREST(schema.GroupResource{Group: "identity.concierge.pinniped.dev", Resource: "whoamirequests"})
	u := &user.DefaultInfo{Name: "alice", UID: "42", Groups: []string{"devs", "system:authenticated"}, Extra: map[string][]string{"scopes": {"a", "b"}}}
	ctx := genericapirequest.WithUser(context.Background(), u)
	ctx = authenticator.WithAudiences(ctx, authenticator.Audiences{"api"})

	out, err := r.Create(ctx, &identity.WhoAmIRequest{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !out.(*identity.WhoAmIRequest).CreationTimestamp.IsZero() {
		t.Error("the response has a creationTimestamp; upstream sends none")
	}
	got := out.(*identity.WhoAmIRequest).Status.KubernetesUserInfo
	want := identity.KubernetesUserInfo{
		User: identity.UserInfo{Username: "alice", UID: "42", Groups: []string{"devs", "system:authenticated"},
			Extra: map[string]identity.ExtraValue{"scopes": {"a", "b"}}},
		Audiences: []string{"api"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}

	if _, err := r.Create(context.Background(), &identity.WhoAmIRequest{}, nil, nil); err == nil {
		t.Error("a request without a user succeeded")
	}
	if _, err := r.Create(genericapirequest.WithNamespace(ctx, "ns"), &identity.WhoAmIRequest{}, nil, nil); err == nil ||
		err.Error() != "namespace is not allowed on WhoAmIRequest: ns" {
		t.Errorf("a namespaced request: got %v", err)
	}
	// dryRun is looked at before the namespace, as upstream does.
	dryRun := &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	_, err = r.Create(genericapirequest.WithNamespace(ctx, "ns"), &identity.WhoAmIRequest{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, nil, dryRun)
	if want := `.identity.concierge.pinniped.dev "x" is invalid: dryRun: Unsupported value: ["All"]`; err == nil || err.Error() != want || !apierrors.IsInvalid(err) {
		t.Errorf("a dryRun request: got %v, want %s", err, want)
	}
}

// The generic server advertises the list verb and the categories from these interfaces.
func TestDiscovery(t *testing.T) {
	var s rest.Storage = NewREST(schema.GroupResource{Group: "identity.concierge.pinniped.dev", Resource: "whoamirequests"})
	cp, ok := s.(rest.CategoriesProvider)
	if !ok || !slices.Equal(cp.Categories(), []string{"pinniped"}) {
		t.Errorf("categories: %v", s)
	}
	if _, ok := s.(rest.ShortNamesProvider); ok {
		t.Error("upstream has no short names")
	}
	l, ok := s.(rest.Lister)
	if !ok {
		t.Fatal("list is not served")
	}
	out, err := l.List(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.(*identity.WhoAmIRequestList); len(got.Items) != 0 || got.ResourceVersion != "0" {
		t.Errorf("got %+v", got)
	}
	if _, ok := l.NewList().(*identity.WhoAmIRequestList); !ok {
		t.Errorf("NewList gives %T", l.NewList())
	}
}
