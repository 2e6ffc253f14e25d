// Package oidcclientsecretrequest serves OIDCClientSecretRequest: a create-and-list, namespaced,
// virtual resource (nothing of it is stored) that generates and revokes the client secrets of the
// OIDCClient with the same name in the Supervisor's namespace. A new secret is returned once, in
// plain text; only its bcrypt hash is kept (see servers/supervisor/internal/clientsecrets).
package oidcclientsecretrequest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"

	"sealion.dev/core/apis/supervisor/clientsecret"
	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/internal/requestcheck"
	"sealion.dev/servers/supervisor/internal/clientsecrets"
)

// OIDCClients reads the OIDCClients of the Supervisor's namespace; the generated typed client
// (with the API group suffix transport) is one.
type OIDCClients interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*configv1alpha1.OIDCClient, error)
}

// Config is what the storage needs.
type Config struct {
	// Namespace is the Supervisor's: the only one where requests are accepted.
	Namespace string
	// OIDCClients and Store read the clients and keep their secrets, in Namespace.
	OIDCClients OIDCClients
	Store       *clientsecrets.Store
	// OIDCClientAPIVersion is config.supervisor.<suffix>/v1alpha1, for the storage Secrets' owner
	// references.
	OIDCClientAPIVersion string
	// Cost is the bcrypt cost of new hashes; clientsecrets.BcryptCost when zero.
	Cost int
	// Rand is the source of new secrets; crypto/rand when nil.
	Rand io.Reader
	// Audit receives an event for each change of a client's secrets, under the request's audit ID.
	Audit *audit.Logger
}

// REST is the storage of oidcclientsecretrequests.
type REST struct {
	cfg            Config
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
func NewREST(cfg Config, groupResource schema.GroupResource) *REST {
	if cfg.Cost == 0 {
		cfg.Cost = clientsecrets.BcryptCost
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	return &REST{cfg: cfg, groupResource: groupResource, tableConvertor: rest.NewDefaultTableConvertor(groupResource)}
}

func (*REST) New() runtime.Object     { return &clientsecret.OIDCClientSecretRequest{} }
func (*REST) Destroy()                {}
func (*REST) NamespaceScoped() bool   { return true }
func (*REST) NewList() runtime.Object { return &clientsecret.OIDCClientSecretRequestList{} }
func (*REST) GetSingularName() string { return "oidcclientsecretrequest" }

// Categories puts the resource in `kubectl get pinniped`, as upstream does.
func (*REST) Categories() []string { return []string{"pinniped"} }

// List always answers an empty list, as upstream does: the verb is served, and nothing of the
// requests is stored.
func (*REST) List(context.Context, *metainternalversion.ListOptions) (runtime.Object, error) {
	return &clientsecret.OIDCClientSecretRequestList{ListMeta: metav1.ListMeta{ResourceVersion: "0"}}, nil
}

// GroupVersionKind makes discovery report the kind under the suffixed group.
func (r *REST) GroupVersionKind(containing schema.GroupVersion) schema.GroupVersionKind {
	return containing.WithKind("OIDCClientSecretRequest")
}

func (r *REST) ConvertToTable(ctx context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.tableConvertor.ConvertToTable(ctx, obj, tableOptions)
}

// Create generates a secret and/or revokes the older ones, as asked, and answers with the new
// secret and the number of secrets the client now has.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	req, ok := obj.(*clientsecret.OIDCClientSecretRequest)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not an OIDCClientSecretRequest: %T", obj))
	}
	if err := r.validate(ctx, req, options); err != nil {
		return nil, err
	}
	if createValidation != nil {
		if err := createValidation(ctx, req.DeepCopy()); err != nil {
			return nil, err
		}
	}

	client, err := r.cfg.OIDCClients.Get(ctx, req.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, r.invalid(req.Name, field.NotFound(field.NewPath("metadata", "name"), req.Name))
	}
	if err != nil {
		return nil, r.internal(fmt.Sprintf("getting client %q", req.Name), err)
	}
	rec, err := r.cfg.Store.Load(ctx, client.UID)
	if err != nil {
		return nil, r.internal(fmt.Sprintf("getting secret for client %q", req.Name), err)
	}

	hashes := rec.Hashes
	var secret string
	if req.Spec.GenerateNewSecret {
		if secret, err = clientsecrets.Generate(r.cfg.Rand); err != nil {
			return nil, r.internal("client secret generation", err)
		}
		hash, err := bcrypt.GenerateFromPassword([]byte(secret), r.cfg.Cost)
		if err != nil {
			return nil, r.internal("hash generation", err)
		}
		hashes = append([]string{string(hash)}, hashes...)
	}
	// Revoking keeps the newest secret: the one just generated, if any. Revoking when there is only
	// that one still counts as a change (stored and audited), as upstream's does.
	revoke := req.Spec.RevokeOldSecrets && len(hashes) > 0
	if revoke {
		hashes = hashes[:1]
	}
	if req.Spec.GenerateNewSecret || revoke {
		if len(hashes) > clientsecrets.MaxSecrets {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("OIDCClient %s has too many secrets, spec.revokeOldSecrets must be true", client.Name))
		}
		owner := clientsecrets.Owner{APIVersion: r.cfg.OIDCClientAPIVersion, Name: client.Name, UID: client.UID}
		if err := r.cfg.Store.Save(ctx, owner, rec, hashes); err != nil {
			if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
				return nil, apierrors.NewConflict(r.groupResource, req.Name, errors.New("multiple concurrent secret generation requests for same client"))
			}
			return nil, r.internal("setting client secret", err)
		}
		r.cfg.Audit.Event(ctx, "OIDCClientSecretRequest Updated Secrets", audit.Fields{},
			"clientID", req.Name, "generatedSecret", req.Spec.GenerateNewSecret, "revokedSecrets", revoke, "totalSecrets", len(hashes))
	}

	return &clientsecret.OIDCClientSecretRequest{
		ObjectMeta: metav1.ObjectMeta{Name: req.Name, Namespace: req.Namespace, CreationTimestamp: metav1.NewTime(time.Now())},
		Spec:       req.Spec,
		Status:     clientsecret.OIDCClientSecretRequestStatus{GeneratedSecret: secret, TotalClientSecrets: len(hashes)},
	}, nil
}

// validate checks the request's namespace, metadata and options, in upstream's order and with its
// messages: the namespace must be the Supervisor's, the name an OIDCClient's (never generated),
// the rest of the metadata as valid as any object's, and dryRun is refused.
func (r *REST) validate(ctx context.Context, req *clientsecret.OIDCClientSecretRequest, options *metav1.CreateOptions) error {
	ns, ok := genericapirequest.NamespaceFrom(ctx)
	if !ok {
		return apierrors.NewInternalError(errors.New("no namespace information found in request context"))
	}
	if err := rest.EnsureObjectNamespaceMatchesRequestNamespace(ns, req); err != nil {
		return err
	}
	if ns != r.cfg.Namespace {
		return apierrors.NewBadRequest(fmt.Sprintf("namespace must be %s on OIDCClientSecretRequest, was %s", r.cfg.Namespace, ns))
	}
	if errs := apivalidation.ValidateObjectMetaAccessor(req, true, validateName, field.NewPath("metadata")); len(errs) > 0 {
		return r.invalid(req.Name, errs...)
	}
	if options != nil {
		return requestcheck.DryRun(r.kind(), req.Name, options.DryRun)
	}
	return nil
}

// validateName accepts the names of OIDCClients that can be used in a URL path, and no generated
// name: the request names the client whose secrets it changes.
func validateName(name string, prefix bool) []string {
	if prefix {
		return []string{"generateName is not supported"}
	}
	var errs []string
	if name == configv1alpha1.OIDCClientNamePrefix {
		errs = append(errs, fmt.Sprintf("must not equal '%s'", configv1alpha1.OIDCClientNamePrefix))
	}
	if !strings.HasPrefix(name, configv1alpha1.OIDCClientNamePrefix) {
		errs = append(errs, fmt.Sprintf("must start with '%s'", configv1alpha1.OIDCClientNamePrefix))
	}
	return append(errs, path.IsValidPathSegmentName(name)...)
}

func (r *REST) invalid(name string, errs ...*field.Error) error {
	return apierrors.NewInvalid(r.kind(), name, errs)
}

// kind names the resource in errors under the group the request came in, suffix included.
func (r *REST) kind() schema.GroupKind {
	return schema.GroupKind{Group: r.groupResource.Group, Kind: "OIDCClientSecretRequest"}
}

// internal logs err and answers with what failed only (upstream's words): details of the cluster
// stay out of responses.
func (r *REST) internal(what string, err error) error {
	klog.ErrorS(err, "OIDCClientSecretRequest failed", "step", what)
	return apierrors.NewInternalError(errors.New(what + " failed"))
}
