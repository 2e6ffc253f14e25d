// Package whoamirequest serves WhoAmIRequest: a create-and-list, cluster-scoped, virtual resource that
// echoes the caller's identity as this server sees it (after the aggregation layer or the
// impersonation proxy).
package whoamirequest

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"sealion.dev/core/apis/concierge/identity"
	"sealion.dev/servers/internal/requestcheck"
)

// REST is the storage of whoamirequests.
type REST struct {
	groupResource  schema.GroupResource
	tableConvertor rest.TableConvertor
}

var (
	_ rest.Creater                  = (*REST)(nil)
	_ rest.Lister                   = (*REST)(nil)
	_ rest.Scoper                   = (*REST)(nil)
	_ rest.Storage                  = (*REST)(nil)
	_ rest.SingularNameProvider     = (*REST)(nil)
	_ rest.GroupVersionKindProvider = (*REST)(nil)
	_ rest.CategoriesProvider       = (*REST)(nil)
)

// NewREST serves the resource named by groupResource.
func NewREST(groupResource schema.GroupResource) *REST {
	return &REST{groupResource: groupResource, tableConvertor: rest.NewDefaultTableConvertor(groupResource)}
}

func (*REST) New() runtime.Object     { return &identity.WhoAmIRequest{} }
func (*REST) Destroy()                {}
func (*REST) NamespaceScoped() bool   { return false }
func (*REST) NewList() runtime.Object { return &identity.WhoAmIRequestList{} }
func (*REST) GetSingularName() string { return "whoamirequest" }

// Categories puts the resource in `kubectl get pinniped`, as upstream does.
func (*REST) Categories() []string { return []string{"pinniped"} }

// List always answers an empty list, as upstream does: the verb is served, and nothing is stored.
func (*REST) List(context.Context, *metainternalversion.ListOptions) (runtime.Object, error) {
	return &identity.WhoAmIRequestList{ListMeta: metav1.ListMeta{ResourceVersion: "0"}}, nil
}

func (r *REST) GroupVersionKind(containing schema.GroupVersion) schema.GroupVersionKind {
	return containing.WithKind("WhoAmIRequest")
}

func (r *REST) ConvertToTable(ctx context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.tableConvertor.ConvertToTable(ctx, obj, tableOptions)
}

// Create answers with the requesting user.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	req, ok := obj.(*identity.WhoAmIRequest)
	if !ok {
		return nil, apierrors.NewBadRequest("not a WhoAmIRequest")
	}
	// In upstream's order: dryRun, then the namespace.
	if options != nil {
		if err := requestcheck.DryRun(schema.GroupKind{Group: r.groupResource.Group}, req.Name, options.DryRun); err != nil {
			return nil, err
		}
	}
	ns, _ := genericapirequest.NamespaceFrom(ctx)
	if err := requestcheck.Namespace("WhoAmIRequest", ns); err != nil {
		return nil, err
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewInternalError(errors.New("no user in the request context"))
	}
	// No creationTimestamp: nothing is created, and upstream sends none.
	out := &identity.WhoAmIRequest{}
	info := &out.Status.KubernetesUserInfo
	info.User.Username = u.GetName()
	info.User.UID = u.GetUID()
	info.User.Groups = u.GetGroups()
	if extra := u.GetExtra(); len(extra) > 0 {
		info.User.Extra = make(map[string]identity.ExtraValue, len(extra))
		for k, v := range extra {
			info.User.Extra[k] = v
		}
	}
	if auds, ok := authenticator.AudiencesFrom(ctx); ok {
		info.Audiences = auds
	}
	return out, nil
}
