// Package tokencredentialrequest serves TokenCredentialRequest: a create-and-list, cluster-scoped,
// virtual resource (nothing is stored) that exchanges spec.token for a client certificate.
package tokencredentialrequest

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"

	"sealion.dev/core/apis/concierge/login"
	"sealion.dev/servers/concierge/internal/authncache"
	"sealion.dev/servers/concierge/internal/credential"
	"sealion.dev/servers/internal/requestcheck"
)

// Exchanger issues a credential for a token; see credential.Exchanger.
type Exchanger interface {
	Exchange(ctx context.Context, key authncache.Key, token string) (*credential.Credential, error)
}

// REST is the storage of tokencredentialrequests.
type REST struct {
	exchanger      Exchanger
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

// NewREST serves the resource named by groupResource (its group carries the API group suffix).
func NewREST(exchanger Exchanger, groupResource schema.GroupResource) *REST {
	return &REST{exchanger: exchanger, groupResource: groupResource, tableConvertor: rest.NewDefaultTableConvertor(groupResource)}
}

func (*REST) New() runtime.Object     { return &login.TokenCredentialRequest{} }
func (*REST) NewList() runtime.Object { return &login.TokenCredentialRequestList{} }
func (*REST) Destroy()                {}
func (*REST) NamespaceScoped() bool   { return false }
func (*REST) GetSingularName() string { return "tokencredentialrequest" }

// Categories puts the resource in `kubectl get pinniped`, as upstream does.
func (*REST) Categories() []string { return []string{"pinniped"} }

// GroupVersionKind makes discovery report the kind under the suffixed group.
func (r *REST) GroupVersionKind(containing schema.GroupVersion) schema.GroupVersionKind {
	return containing.WithKind("TokenCredentialRequest")
}

// List always answers an empty list: kubectl and RBAC tooling expect the verb, and nothing is stored.
func (*REST) List(context.Context, *metainternalversion.ListOptions) (runtime.Object, error) {
	return &login.TokenCredentialRequestList{ListMeta: metav1.ListMeta{ResourceVersion: "0"}}, nil
}

func (r *REST) ConvertToTable(ctx context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.tableConvertor.ConvertToTable(ctx, obj, tableOptions)
}

// Create authenticates spec.token and answers with a credential or the uniform failure message;
// a request without a token is invalid (credential.RequireToken).
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	req, ok := obj.(*login.TokenCredentialRequest)
	if !ok {
		return nil, apierrors.NewBadRequest("not a TokenCredentialRequest")
	}
	if err := r.validate(ctx, req, options); err != nil {
		return nil, err
	}
	if createValidation != nil {
		// Admission webhooks may look at the request, but never at the token.
		redacted := req.DeepCopy()
		redacted.Spec.Token = ""
		if err := createValidation(ctx, redacted); err != nil {
			return nil, err
		}
	}

	key := authncache.Key{
		APIGroup: ptr.Deref(req.Spec.Authenticator.APIGroup, ""),
		Kind:     req.Spec.Authenticator.Kind,
		Name:     req.Spec.Authenticator.Name,
	}
	// No creationTimestamp: nothing is created, and upstream sends none.
	out := &login.TokenCredentialRequest{}
	cred, err := r.exchanger.Exchange(ctx, key, req.Spec.Token)
	switch {
	case errors.Is(err, credential.ErrAuthenticationFailed):
		out.Status.Message = ptr.To(credential.ErrAuthenticationFailed.Error())
	case err != nil:
		return nil, apierrors.NewInternalError(err)
	default:
		out.Status.Credential = &login.ClusterCredential{
			ExpirationTimestamp:   metav1.NewTime(cred.ExpirationTimestamp),
			ClientCertificateData: cred.ClientCertificateData,
			ClientKeyData:         cred.ClientKeyData,
		}
	}
	return out, nil
}

func (r *REST) validate(ctx context.Context, req *login.TokenCredentialRequest, options *metav1.CreateOptions) error {
	// In upstream's order: the token, then dryRun, then the namespace.
	if err := credential.RequireToken(r.groupResource.Group, req.Name, req.Spec.Token); err != nil {
		return err
	}
	if options != nil {
		if err := requestcheck.DryRun(schema.GroupKind{Group: r.groupResource.Group}, req.Name, options.DryRun); err != nil {
			return err
		}
	}
	ns, _ := genericapirequest.NamespaceFrom(ctx)
	return requestcheck.Namespace("TokenCredentialRequest", ns)
}
